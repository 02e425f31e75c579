/**
 * The dot products of a query with stored vectors, in WebAssembly SIMD: about 2.5 times faster than the same loop in
 * JavaScript (100k × 384-d: 15 against 35–40 ms on one core here), and the same numbers bit for bit.
 *
 * Vectors are stored in blocks of 4 rows, interleaved by dimension (for each dimension, the 4 rows' float32 values),
 * so one 16-byte load brings one dimension of 4 rows. Each row keeps its own float64 sum, added in dimension order
 * from float32 × float32 products (exact in float64) without fused multiply-add: what platform.vector_dot computes.
 * Two blocks per iteration give four independent sums to keep the adder busy.
 *
 * The kernel is the WAT below, assembled by `assemble` (which knows only the instructions it uses), so that it can be
 * read and changed here without a toolchain; the tests compare every score it makes with SQL's.
 */

/** score(vec, q, out, blocks, dims): out[4b + lane] = Σ_d vec[b][d][lane] × q[d], for blocks b = 0 … blocks-1. */
const SCORE = `
  local.get $dims
  i32.const 16
  i32.mul
  local.set $stride
  i32.const 0
  local.set $b
  block $pairs_done
    loop $pairs
      ;; two blocks at a time while two are left
      local.get $b
      i32.const 2
      i32.add
      local.get $blocks
      i32.gt_u
      br_if $pairs_done
      local.get $vec
      local.get $b
      local.get $stride
      i32.mul
      i32.add
      local.tee $p
      local.get $stride
      i32.add
      local.set $p2
      local.get $q
      local.set $qp
      v128.const i32x4 0 0 0 0
      local.tee $a0
      local.tee $a1
      local.tee $a2
      local.set $a3
      local.get $dims
      local.set $d
      loop $dims2
        local.get $qp
        v128.load64_splat
        local.set $x
        local.get $p
        v128.load
        local.set $v
        local.get $p2
        v128.load
        local.set $w
        ;; rows 0 and 1 of the first block
        local.get $a0
        local.get $v
        f64x2.promote_low_f32x4
        local.get $x
        f64x2.mul
        f64x2.add
        local.set $a0
        ;; rows 2 and 3
        local.get $a1
        local.get $v
        local.get $v
        i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7
        f64x2.promote_low_f32x4
        local.get $x
        f64x2.mul
        f64x2.add
        local.set $a1
        ;; the second block
        local.get $a2
        local.get $w
        f64x2.promote_low_f32x4
        local.get $x
        f64x2.mul
        f64x2.add
        local.set $a2
        local.get $a3
        local.get $w
        local.get $w
        i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7
        f64x2.promote_low_f32x4
        local.get $x
        f64x2.mul
        f64x2.add
        local.set $a3
        local.get $p
        i32.const 16
        i32.add
        local.set $p
        local.get $p2
        i32.const 16
        i32.add
        local.set $p2
        local.get $qp
        i32.const 8
        i32.add
        local.set $qp
        local.get $d
        i32.const 1
        i32.sub
        local.tee $d
        br_if $dims2
      end
      local.get $out
      local.get $b
      i32.const 5
      i32.shl
      i32.add
      local.tee $o
      local.get $a0
      v128.store
      local.get $o
      local.get $a1
      v128.store offset=16
      local.get $o
      local.get $a2
      v128.store offset=32
      local.get $o
      local.get $a3
      v128.store offset=48
      local.get $b
      i32.const 2
      i32.add
      local.set $b
      br $pairs
    end
  end
  block $single_done
    ;; the last block, if their number is odd
    local.get $b
    local.get $blocks
    i32.ge_u
    br_if $single_done
    local.get $vec
    local.get $b
    local.get $stride
    i32.mul
    i32.add
    local.set $p
    local.get $q
    local.set $qp
    v128.const i32x4 0 0 0 0
    local.tee $a0
    local.set $a1
    local.get $dims
    local.set $d
    loop $dims1
      local.get $qp
      v128.load64_splat
      local.set $x
      local.get $p
      v128.load
      local.set $v
      local.get $a0
      local.get $v
      f64x2.promote_low_f32x4
      local.get $x
      f64x2.mul
      f64x2.add
      local.set $a0
      local.get $a1
      local.get $v
      local.get $v
      i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7
      f64x2.promote_low_f32x4
      local.get $x
      f64x2.mul
      f64x2.add
      local.set $a1
      local.get $p
      i32.const 16
      i32.add
      local.set $p
      local.get $qp
      i32.const 8
      i32.add
      local.set $qp
      local.get $d
      i32.const 1
      i32.sub
      local.tee $d
      br_if $dims1
    end
    local.get $out
    local.get $b
    i32.const 5
    i32.shl
    i32.add
    local.tee $o
    local.get $a0
    v128.store
    local.get $o
    local.get $a1
    v128.store offset=16
  end
`;

const PARAMS = ['vec', 'q', 'out', 'blocks', 'dims'];
const I32_LOCALS = ['b', 'd', 'p', 'p2', 'qp', 'stride', 'o'];
const V128_LOCALS = ['v', 'w', 'x', 'a0', 'a1', 'a2', 'a3'];

/** Opcodes of the instructions the kernel uses: [prefix, code] for SIMD (0xfd), [code] otherwise. */
const OPCODES: Record<string, number[]> = {
  block: [0x02],
  loop: [0x03],
  end: [0x0b],
  br: [0x0c],
  br_if: [0x0d],
  'local.get': [0x20],
  'local.set': [0x21],
  'local.tee': [0x22],
  'i32.const': [0x41],
  'i32.gt_u': [0x4b],
  'i32.ge_u': [0x4f],
  'i32.add': [0x6a],
  'i32.sub': [0x6b],
  'i32.mul': [0x6c],
  'i32.shl': [0x74],
  'v128.load': [0xfd, 0x00],
  'v128.load64_splat': [0xfd, 0x0a],
  'v128.store': [0xfd, 0x0b],
  'v128.const': [0xfd, 0x0c],
  'i8x16.shuffle': [0xfd, 0x0d],
  'f64x2.promote_low_f32x4': [0xfd, 0x5f],
  'f64x2.add': [0xfd, 0xf0],
  'f64x2.mul': [0xfd, 0xf2],
};
/** log2 of the natural alignment of the memory instructions. */
const ALIGN: Record<string, number> = { 'v128.load': 4, 'v128.store': 4, 'v128.load64_splat': 3 };

const uleb = (n: number): number[] => {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
};
const sleb = (n: number): number[] => {
  const out: number[] = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    if ((n === 0 && (byte & 0x40) === 0) || (n === -1 && (byte & 0x40) !== 0)) return [...out, byte];
    out.push(byte | 0x80);
  }
};
const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];
const name = (s: string): number[] => vec([...Buffer.from(s, 'utf8')].map((b) => [b]));
const section = (id: number, contents: number[]): number[] => [id, ...uleb(contents.length), ...contents];

/** The function body of flat WAT with `$name` locals and labels (the instructions above only). */
function assembleBody(wat: string, locals: string[]): number[] {
  const out: number[] = [];
  const labels: string[] = [];
  const local = (token: string) => {
    const i = locals.indexOf(token.replace(/^\$/, ''));
    if (i < 0) throw new Error(`unknown local ${token}`);
    return i;
  };
  for (const raw of wat.split('\n')) {
    const line = raw.replace(/;;.*$/, '').trim();
    if (!line) continue;
    const [op, ...args] = line.split(/\s+/) as [string, ...string[]];
    const code = OPCODES[op];
    if (!code) throw new Error(`unknown instruction ${op}`);
    out.push(...code.slice(0, 1), ...(code.length > 1 ? uleb(code[1]!) : []));
    switch (op) {
      case 'block':
      case 'loop':
        labels.push(args[0]!);
        out.push(0x40); // no result
        break;
      case 'end':
        labels.pop();
        break;
      case 'br':
      case 'br_if': {
        const depth = labels.length - 1 - labels.lastIndexOf(args[0]!);
        if (depth >= labels.length) throw new Error(`unknown label ${args[0]}`);
        out.push(...uleb(depth));
        break;
      }
      case 'local.get':
      case 'local.set':
      case 'local.tee':
        out.push(...uleb(local(args[0]!)));
        break;
      case 'i32.const':
        out.push(...sleb(Number(args[0])));
        break;
      case 'v128.const': {
        if (args[0] !== 'i32x4') throw new Error('v128.const: i32x4 only');
        const bytes = Buffer.alloc(16);
        for (let i = 0; i < 4; i++) bytes.writeInt32LE(Number(args[i + 1]), 4 * i);
        out.push(...bytes);
        break;
      }
      case 'i8x16.shuffle':
        out.push(...args.map(Number));
        break;
      case 'v128.load':
      case 'v128.store':
      case 'v128.load64_splat': {
        const offset = Number(args.find((a) => a.startsWith('offset='))?.slice(7) ?? 0);
        out.push(...uleb(ALIGN[op]!), ...uleb(offset));
        break;
      }
    }
  }
  if (labels.length) throw new Error('unclosed block');
  return [...out, 0x0b];
}

function assemble(): Uint8Array {
  const I32 = 0x7f;
  const V128 = 0x7b;
  const type = [0x60, ...vec(PARAMS.map(() => [I32])), ...vec([])];
  // env.memory: shared, 1 to 65536 pages (each surface brings its own).
  const memoryImport = [...name('env'), ...name('memory'), 0x02, 0x03, ...uleb(1), ...uleb(65536)];
  const body = [
    ...vec([
      [...uleb(I32_LOCALS.length), I32],
      [...uleb(V128_LOCALS.length), V128],
    ]),
    ...assembleBody(SCORE, [...PARAMS, ...I32_LOCALS, ...V128_LOCALS]),
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, vec([type])),
    ...section(2, vec([memoryImport])),
    ...section(3, vec([[0]])),
    ...section(7, vec([[...name('score'), 0x00, 0]])),
    ...section(10, vec([[...uleb(body.length), ...body]])),
  ]);
}

/** The module: imports `env.memory` (shared), exports `score`. */
export const DOT_KERNEL_WASM: Uint8Array = assemble();

/** The module as WAT text: `wat2wasm --enable-threads` makes the same bytes as `assemble` (checked with wabt 1.0.39). */
export const DOT_KERNEL_WAT = `(module
  (import "env" "memory" (memory 1 65536 shared))
  (func (export "score") ${PARAMS.map((p) => `(param $${p} i32)`).join(' ')}
    ${I32_LOCALS.map((l) => `(local $${l} i32)`).join(' ')}
    ${V128_LOCALS.map((l) => `(local $${l} v128)`).join(' ')}
${SCORE}))`;
