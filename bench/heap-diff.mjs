// What grew between two V8 heap snapshots (`node heap-diff.mjs a.heapsnapshot b.heapsnapshot [top]`): objects
// grouped by type and name (a constructor, or a string/closure/array), their count and self size in each, the
// top groups by growth of self size. A tool for soak.mjs's SOAK_HEAP_SNAPSHOTS; prints, never asserts.
import { readFileSync } from 'node:fs';

function groups(path) {
  const snap = JSON.parse(readFileSync(path, 'utf8'));
  const f = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const [ti, ni, si] = [f.indexOf('type'), f.indexOf('name'), f.indexOf('self_size')];
  const out = new Map();
  for (let i = 0; i < snap.nodes.length; i += f.length) {
    const type = types[snap.nodes[i + ti]];
    let name = snap.strings[snap.nodes[i + ni]];
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') name = '(strings)';
    else if (type === 'code' || type === 'hidden') name = `(${type})`;
    else if (name.length > 60) name = `${name.slice(0, 57)}...`;
    const key = `${type}:${name}`;
    const g = out.get(key) ?? { count: 0, size: 0 };
    g.count++;
    g.size += snap.nodes[i + si];
    out.set(key, g);
  }
  return out;
}

const [a, b, top = '25'] = process.argv.slice(2);
const before = groups(a);
const after = groups(b);
const rows = [...after].map(([key, g]) => {
  const o = before.get(key) ?? { count: 0, size: 0 };
  return { key, count: g.count, dCount: g.count - o.count, size: g.size, dSize: g.size - o.size };
});
rows.sort((x, y) => y.dSize - x.dSize);
console.log('grown self size  grown count  count now  group');
for (const r of rows.slice(0, Number(top))) {
  console.log(`${(r.dSize / 1024).toFixed(0).padStart(12)} KiB  ${String(r.dCount).padStart(11)}  ${String(r.count).padStart(9)}  ${r.key}`);
}
