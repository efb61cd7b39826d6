export default function (output, context) {
  return output.startsWith('Say') ? 1 : 0.4;
}

export function strict(output) {
  return output === 'Say olá';
}
