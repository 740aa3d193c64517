import { test } from "node:test";
import assert from "node:assert/strict";
import { FrameParser, FrameError, encodeProbe, dataFrame, decodeProbeReply, probeRTT, HEADER_LEN } from "../src/frames";

function reply(seq: number, sent: number, recv: number, send: number): Uint8Array {
  const b = new Uint8Array(HEADER_LEN + 32);
  const v = new DataView(b.buffer);
  v.setUint8(0, 3); v.setUint32(4, 32);
  v.setBigUint64(8, BigInt(seq)); v.setBigUint64(16, BigInt(sent));
  v.setBigUint64(24, BigInt(recv)); v.setBigUint64(32, BigInt(send));
  return b;
}

test("counts data payload and decodes replies however the stream is split", () => {
  const stream = new Uint8Array([...dataFrame(1000), ...reply(7, 1_000_000, 5_000_000, 5_250_000), ...dataFrame(70_000)]);
  for (const cut of [1, 3, 7, 8, 9, 1000, 1008, 1010, 4096, stream.length]) {
    const p = new FrameParser();
    const got: number[] = [];
    for (let i = 0; i < stream.length; i += cut) p.push(stream.subarray(i, i + cut), (r) => got.push(r.seq));
    assert.equal(p.payloadBytes, 71_000, `cut ${cut}`);
    assert.deepEqual(got, [7], `cut ${cut}`);
  }
});

test("rejects malformed frames", () => {
  const bad = [
    new Uint8Array([9, 0, 0, 0, 0, 0, 0, 0]),
    new Uint8Array([1, 1, 0, 0, 0, 0, 0, 0]),
    new Uint8Array([3, 0, 0, 0, 0, 0, 0, 31]),
    new Uint8Array([1, 0, 0, 0, 0x7f, 0, 0, 0]),
  ];
  for (const b of bad) assert.throws(() => new FrameParser().push(b), FrameError);
});

test("probe round trip removes the server's processing time", () => {
  const f = encodeProbe(5, 2_000_000);
  assert.equal(f.length, 24);
  assert.equal(f[0], 2);
  const r = decodeProbeReply(reply(5, 2_000_000, 9_000_000, 9_500_000).subarray(HEADER_LEN));
  assert.equal(r.seq, 5);
  const { rttMs, serverMs } = probeRTT(r, 12_500_000);
  assert.equal(serverMs, 0.5);
  assert.equal(rttMs, 10);
});

test("data frames are random, not constant", () => {
  const f = dataFrame(200_000);
  const seen = new Set(f.subarray(HEADER_LEN, HEADER_LEN + 4096));
  assert.ok(seen.size > 200);
  assert.ok(f[HEADER_LEN + 150_000] !== undefined);
});
