module.exports.makePrompt = async function ({ vars, provider, config }) {
  return `Write about {{topic}} for ${provider.label ?? provider.id} (${Object.keys(config).length} settings) {{ extra }}`;
};
