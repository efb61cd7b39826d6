module.exports = function () {
  return { output: new Date().getFullYear() >= 2026 ? 'in 2026 or later' : 'before 2026' };
};
