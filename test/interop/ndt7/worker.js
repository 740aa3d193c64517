'use strict';
// worker.js is the thread side of run.js's Web Worker shim. It gives an
// unmodified ndt7-js worker script the browser globals it uses (self,
// postMessage, onmessage, WebSocket), then loads it.

const {parentPort, workerData} = require('node:worker_threads');
const WS = require('ws');

// WebSocket takes the browser constructor's arguments. --insecure accepts a
// self-signed server certificate, as a test server has.
class WebSocket extends WS {
  constructor(url, protocols) {
    super(url, protocols, {rejectUnauthorized: !workerData.insecure});
  }
}

globalThis.WebSocket = WebSocket;
globalThis.self = globalThis;
globalThis.postMessage = (data) => parentPort.postMessage(data);
require(workerData.file);
parentPort.on('message', (data) => globalThis.onmessage({data}));
