// What every node script of the end-to-end tests shares: how a check is
// reported to the Go side, a bound on every wait, and the steps a script
// asks the Go side to take (an edit, a restart) before it goes on.

import assert from 'node:assert/strict';
import readline from 'node:readline';

export const WAIT = 10_000; // upper bound for anything the server owes us

// ok reports a check that passed: {"ok": "<check>", ...extra}.
export function ok(check, extra = {}) {
  console.log(JSON.stringify({ ok: check, ...extra }));
}

// within fails when promise takes longer than ms.
export function within(promise, what, ms = WAIT) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// input reads the Go side's answers on stdin; made by the first step, so
// that a script without steps does not keep stdin open.
let input;

// step prints {"step": name} and waits, at most ms, for the Go side to
// answer "done" once it took the step.
export async function step(name, ms = WAIT) {
  input ??= readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  console.log(JSON.stringify({ step: name }));
  const { value, done } = await within(input.next(), `the Go side to take step ${name}`, ms);
  assert.ok(!done && value === 'done', `step ${name}: the Go side answered ${value}`);
}
