module.exports = {
  trim(output, context) {
    return output.trim();
  },
};
