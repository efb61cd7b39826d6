module.exports = () => ({ error: 'no data for this topic' });
