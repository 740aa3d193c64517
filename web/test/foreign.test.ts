import { test } from "node:test";
import assert from "node:assert/strict";
import { probeTimes } from "../src/foreign";

test("probeTimes reads a new connection's handshakes and request", () => {
  // http: no TLS.
  const plain = probeTimes({ connectStart: 10, connectEnd: 10.4, secureConnectionStart: 0, requestStart: 10.5, responseEnd: 11.7 });
  assert.ok(plain);
  assert.ok(Math.abs(plain.tcp_ms - 0.4) < 1e-9 && Math.abs(plain.http_ms - 1.2) < 1e-9);
  assert.equal(plain.tls_ms, undefined);
  // https: the TCP part ends where TLS starts.
  const tls = probeTimes({ connectStart: 10, connectEnd: 13, secureConnectionStart: 11, requestStart: 13.1, responseEnd: 14.1 });
  assert.ok(tls);
  assert.ok(Math.abs(tls.tcp_ms - 1) < 1e-9 && Math.abs((tls.tls_ms ?? 0) - 2) < 1e-9 && Math.abs(tls.http_ms - 1) < 1e-9);
});

test("probeTimes refuses a reused connection and missing timing", () => {
  // A reused connection has no handshake: connectStart == connectEnd.
  assert.equal(probeTimes({ connectStart: 10, connectEnd: 10, secureConnectionStart: 0, requestStart: 10, responseEnd: 11 }), null);
  // Cross-origin entries without Timing-Allow-Origin read as zeros.
  assert.equal(probeTimes({ connectStart: 0, connectEnd: 0, secureConnectionStart: 0, requestStart: 0, responseEnd: 11 }), null);
  assert.equal(probeTimes({ connectStart: 1, connectEnd: 2, secureConnectionStart: 0, requestStart: 0, responseEnd: 3 }), null);
});
