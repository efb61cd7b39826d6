module.exports = ({ vars }) => [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: `Explain ${vars.topic} in {{loud}} words` },
];
