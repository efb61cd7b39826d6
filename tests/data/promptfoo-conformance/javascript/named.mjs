export function strict(output) {
  return output === 'Say olá';
}
