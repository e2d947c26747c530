// Makes the relaxed-SIMD engine loadable: Debian's clang 14 (Emscripten 3.1.6) has relaxed SIMD
// only as its prototype, whose __builtin_wasm_fma_f32x4 emits the prototype opcode f32x4.fma
// (0xfd 0xaf 0x01), which browsers reject. The standard instruction is f32x4.relaxed_madd
// (0xfd 0x85 0x02): a * b + c of the three operands in stack order, fused or not as the
// hardware does it. This walks every instruction of every function body (so that no immediate
// or constant that happens to hold those bytes is touched), rewrites each prototype f32x4.fma to
// f32x4.relaxed_madd in place (both opcodes take two LEB128 bytes), and refuses any other
// instruction it does not know. Then it checks that the result validates where relaxed SIMD is
// on, and that its imports and exports are the plain build's, so that the one glue drives both.
//
// Usage: node --experimental-wasm-relaxed-simd scripts/wasm/relaxed_madd.mjs IN.wasm OUT.wasm
//          [PLAIN.wasm [IN.js PLAIN.js]]
// (Node 20 validates relaxed SIMD only behind that flag.) PLAIN.wasm: the plain build, whose
// imports and exports OUT must have; IN.js, PLAIN.js: the two builds' glue, which must be the
// same but for the name of the wasm file each was linked with. Prints how many sites it rewrote.
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';

const PROTOTYPE_FMA = 0xaf;       // f32x4.fma (the relaxed-SIMD prototype, LLVM 14)
const RELAXED_MADD = 0x105;       // f32x4.relaxed_madd

class WasmError extends Error {}

function uleb(bytes, at) {
  let value = 0;
  let shift = 0;
  let byte;
  do {
    if (at >= bytes.length) throw new WasmError('a LEB128 number runs past the end');
    byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
}

const skipLeb = (bytes, at) => uleb(bytes, at)[1];
const memarg = (bytes, at) => skipLeb(bytes, skipLeb(bytes, at));

// The block type of block, loop and if: empty (0x40), a value type, or a type index (s33).
function blockType(bytes, at) {
  const b = bytes[at];
  if (b === 0x40 || (b >= 0x7b && b <= 0x7f) || b === 0x70 || b === 0x6f) return at + 1;
  return skipLeb(bytes, at);
}

// The instruction at `at` (its first byte is the opcode): where the next one starts. `fma`
// collects the offset of each prototype f32x4.fma's sub-opcode.
function instruction(bytes, at, fma) {
  const op = bytes[at++];
  if (op === 0x02 || op === 0x03 || op === 0x04) return blockType(bytes, at);
  if ([0x00, 0x01, 0x05, 0x0b, 0x0f, 0x1a, 0x1b, 0xd1].includes(op)) return at;
  if ([0x0c, 0x0d, 0x10, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0xd2].includes(op)) return skipLeb(bytes, at);
  if (op === 0x0e) {  // br_table: the labels, then the default
    let count;
    [count, at] = uleb(bytes, at);
    for (let i = 0; i <= count; ++i) at = skipLeb(bytes, at);
    return at;
  }
  if (op === 0x11) return skipLeb(bytes, skipLeb(bytes, at));  // call_indirect: type, table
  if (op === 0x1c) {  // select with its value types
    let count;
    [count, at] = uleb(bytes, at);
    return at + count;
  }
  if (op >= 0x28 && op <= 0x3e) return memarg(bytes, at);
  if (op === 0x3f || op === 0x40) return at + 1;  // memory.size, memory.grow: memory 0
  if (op === 0x41 || op === 0x42) return skipLeb(bytes, at);
  if (op === 0x43) return at + 4;
  if (op === 0x44) return at + 8;
  if (op >= 0x45 && op <= 0xc4) return at;  // numeric and sign-extension: no immediates
  if (op === 0xd0) return at + 1;  // ref.null: its type
  if (op === 0xfc) {
    let sub;
    [sub, at] = uleb(bytes, at);
    if (sub <= 7) return at;  // saturating truncations
    if (sub === 8) return skipLeb(bytes, at) + 1;  // memory.init: data index, memory
    if (sub === 9 || sub === 13 || (sub >= 15 && sub <= 17)) return skipLeb(bytes, at);
    if (sub === 10) return at + 2;  // memory.copy: two memories
    if (sub === 11) return at + 1;  // memory.fill
    if (sub === 12 || sub === 14) return skipLeb(bytes, skipLeb(bytes, at));
    throw new WasmError(`unknown instruction 0xfc ${sub} at byte ${at}`);
  }
  if (op === 0xfd) {
    const start = at;
    let sub;
    [sub, at] = uleb(bytes, at);
    if (sub <= 11 || sub === 92 || sub === 93) return memarg(bytes, at);  // loads, store, load_zero
    if (sub === 12 || sub === 13) return at + 16;  // v128.const, i8x16.shuffle
    if (sub >= 21 && sub <= 34) return at + 1;  // extract_lane, replace_lane
    if (sub >= 84 && sub <= 91) return memarg(bytes, at) + 1;  // load_lane, store_lane
    if (sub === PROTOTYPE_FMA) {
      if (at - start !== 2) throw new WasmError(`f32x4.fma at byte ${start} is not in two LEB128 bytes`);
      fma.push(start);
    }
    return at;  // every other SIMD instruction has no immediate
  }
  throw new WasmError(`unknown opcode 0x${op.toString(16)} at byte ${at - 1}`);
}

// Offsets of the prototype f32x4.fma sub-opcodes in the module's code section.
export function fmaSites(bytes) {
  if (bytes.length < 8 || bytes[0] !== 0x00 || bytes[1] !== 0x61 || bytes[2] !== 0x73 || bytes[3] !== 0x6d) {
    throw new WasmError('not a WebAssembly module');
  }
  const fma = [];
  let at = 8;
  while (at < bytes.length) {
    const id = bytes[at++];
    let size;
    [size, at] = uleb(bytes, at);
    const end = at + size;
    if (id === 10) {
      let count;
      [count, at] = uleb(bytes, at);
      for (let f = 0; f < count; ++f) {
        let bodySize;
        [bodySize, at] = uleb(bytes, at);
        const bodyEnd = at + bodySize;
        let groups;
        [groups, at] = uleb(bytes, at);
        for (let g = 0; g < groups; ++g) at = skipLeb(bytes, at) + 1;  // count, value type
        while (at < bodyEnd) at = instruction(bytes, at, fma);
        if (at !== bodyEnd) throw new WasmError(`function ${f}'s instructions overrun its body`);
      }
    }
    at = end;
  }
  return fma;
}

export function relax(bytes) {
  const out = Uint8Array.from(bytes);
  const sites = fmaSites(out);
  for (const at of sites) {
    out[at] = 0x80 | (RELAXED_MADD & 0x7f);
    out[at + 1] = RELAXED_MADD >> 7;
  }
  return { bytes: out, sites: sites.length };
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const [input, output, plain, glue, plainGlue] = process.argv.slice(2);
  if (!input || !output || (glue && !plainGlue)) {
    console.error('usage: node --experimental-wasm-relaxed-simd scripts/wasm/relaxed_madd.mjs IN.wasm OUT.wasm [PLAIN.wasm [IN.js PLAIN.js]]');
    process.exit(2);
  }
  try {
    const { bytes, sites } = relax(readFileSync(input));
    if (sites === 0) throw new WasmError(`${input} has no f32x4.fma: was it built with -mrelaxed-simd?`);
    if (!WebAssembly.validate(bytes)) throw new WasmError(`${output} does not validate (is relaxed SIMD on in this Node? --experimental-wasm-relaxed-simd)`);
    const shape = (b) => {
      const m = new WebAssembly.Module(b);
      return JSON.stringify([WebAssembly.Module.imports(m), WebAssembly.Module.exports(m)]);
    };
    if (plain && shape(bytes) !== shape(readFileSync(plain))) throw new WasmError(`${output}'s imports or exports differ from ${plain}'s: one glue cannot drive both`);
    if (glue && readFileSync(glue, 'utf8').replaceAll(basename(input), basename(plain)) !== readFileSync(plainGlue, 'utf8')) {
      throw new WasmError(`${glue} differs from ${plainGlue} beyond the wasm file's name: one glue cannot drive both`);
    }
    writeFileSync(output, bytes);
    console.log(`relaxed_madd: ${sites} f32x4.fma rewritten to f32x4.relaxed_madd in ${output}`);
  } catch (error) {
    console.error(`relaxed_madd: ${error.message}`);
    process.exit(1);
  }
}
