// scripts/wasm/relaxed_madd.mjs, the rewrite that makes the relaxed-SIMD engine loadable: it
// finds the prototype f32x4.fma by walking instructions, not by searching bytes, and refuses
// what it cannot walk. The built engine itself is checked by tests/js/engine.test.mjs.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';

import { fmaSites, relax } from '../../scripts/wasm/relaxed_madd.mjs';

setFlagsFromString('--experimental-wasm-relaxed-simd');

const FMA = [0xfd, 0xaf, 0x01];
const MADD = [0xfd, 0x85, 0x02];
const splat = [0x41, 0x00, 0xfd, 0x11];  // i32.const 0, i32x4.splat

// A module of one function [] -> [] with the given instructions (end appended).
function moduleOf(instructions) {
  const body = [0x00, ...instructions, 0x0b];
  return new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
    0x03, 0x02, 0x01, 0x00,
    0x0a, body.length + 2, 0x01, body.length, ...body,
  ]);
}

test('only the instruction is rewritten, not the same bytes inside a v128.const', () => {
  // v128.const whose 16 bytes begin with fd af 01, dropped; then a real f32x4.fma of three splats.
  const constant = [0xfd, 0x0c, ...FMA, ...new Array(13).fill(0), 0x1a];
  const bytes = moduleOf([...constant, ...splat, ...splat, ...splat, ...FMA, 0x1a]);
  assert.equal(WebAssembly.validate(bytes), false, 'the prototype opcode validates: the test proves nothing');
  assert.deepEqual(fmaSites(bytes), [constant.length + 3 * splat.length + 23 + 1]);
  const { bytes: out, sites } = relax(bytes);
  assert.equal(sites, 1);
  assert.ok(WebAssembly.validate(out), 'the rewritten module does not validate');
  const at = 23 + 2;  // the constant's 16 bytes start after the header, sections, locals and fd 0c
  assert.deepEqual([...out.subarray(at, at + 3)], FMA, 'the constant was changed');
  assert.deepEqual([...out.subarray(out.length - 5, out.length - 2)], MADD);
});

test('an instruction it does not know, or a body that overruns, is refused', () => {
  assert.throws(() => fmaSites(moduleOf([0x06, 0x40, 0x0b])), /unknown opcode 0x6/);  // try (exceptions)
  assert.throws(() => fmaSites(moduleOf([0x44])), /overrun its body/);  // f64.const without its 8 bytes
  assert.throws(() => fmaSites(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])), /not a WebAssembly module/);
});

test('the plain engine has no prototype instruction, and walks to its end', () => {
  const plain = readFileSync(new URL('../../build/wasm/attention_engine.wasm', import.meta.url));
  assert.deepEqual(fmaSites(plain), []);
  const shipped = readFileSync(new URL('../../build/wasm/attention_engine.relaxed.wasm', import.meta.url));
  assert.deepEqual(fmaSites(shipped), [], 'the relaxed engine still holds prototype opcodes');
  assert.ok(WebAssembly.validate(shipped));
});
