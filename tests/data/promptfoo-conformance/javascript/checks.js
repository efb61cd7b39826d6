// CommonJS: the default export and a named one.
function check(output, context) {
  return output.toLowerCase().includes(context.vars.word);
}
check.scored = function (output) {
  const score = Math.min(1, output.length / 12);
  return { pass: score > 0.5, score, reason: `length ${output.length}` };
};
module.exports = check;
module.exports.scored = check.scored;
