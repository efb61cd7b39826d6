module.exports = (value) => String(value).toUpperCase();
