import { wordCount } from './words';

interface Context {
  vars: Record<string, unknown>;
}

export default function (output: string, context: Context): boolean {
  return output.includes(String(context.vars.word)) && wordCount(output) === 2;
}

export function longEnough(output: string): number {
  const n: number = output.length;
  return n >= 9 ? 1 : n / 9;
}
