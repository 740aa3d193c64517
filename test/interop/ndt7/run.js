#!/usr/bin/env node
'use strict';
// run.js runs the reference ndt7 JavaScript client, @m-lab/ndt7 as published
// on npm and unmodified, against one server: a download, then an upload. It
// prints what the client saw as JSON on stdout and exits non-zero if either
// test failed.
//
//   node run.js [--insecure] ws://127.0.0.1:8080
//
// The URL's scheme picks plain (ws, http) or TLS (wss, https) WebSockets;
// --insecure accepts any server certificate. The library is pointed at the
// server with its `server` and `protocol` options, which bypass the M-Lab
// locate service.
//
// The library is written for browsers: it runs each test in a Web Worker that
// uses the WebSocket API. Here the workers are node:worker_threads behind a
// small Worker shim (below and worker.js), and WebSocket is the `ws` package.

const path = require('node:path');
const threads = require('node:worker_threads');
const ndt7 = require('@m-lab/ndt7');
const libVersion = require('@m-lab/ndt7/package.json').version;

// overallTimeoutMs bounds the whole run; the library itself gives each test
// 12 s.
const overallTimeoutMs = 60000;

function usage(msg) {
  process.stderr.write(`run.js: ${msg}\nusage: node run.js [--insecure] ws://host:port\n`);
  process.exit(2);
}

function parseArgs(argv) {
  let insecure = false;
  const rest = [];
  for (const a of argv) {
    if (a === '--insecure') {
      insecure = true;
    } else {
      rest.push(a);
    }
  }
  if (rest.length !== 1) {
    usage('want exactly one server URL');
  }
  let url;
  try {
    url = new URL(rest[0]);
  } catch (err) {
    usage(`bad URL ${rest[0]}: ${err.message}`);
  }
  const protocols = {'ws:': 'ws', 'http:': 'ws', 'wss:': 'wss', 'https:': 'wss'};
  if (!(url.protocol in protocols)) {
    usage(`unsupported scheme ${url.protocol}`);
  }
  return {host: url.host, protocol: protocols[url.protocol], insecure};
}

// workerClass returns a class with the Web Worker API the library uses
// (constructor(file), onmessage, postMessage, terminate).
function workerClass(insecure) {
  return class {
    constructor(file) {
      this.onmessage = null;
      this.thread = new threads.Worker(path.join(__dirname, 'worker.js'),
          {workerData: {file, insecure}});
      this.thread.on('message', (data) => this.deliver(data));
      this.thread.on('error', (err) =>
        this.deliver({MsgType: 'error', Error: String(err)}));
    }
    deliver(data) {
      if (this.onmessage) {
        this.onmessage({data});
      }
    }
    postMessage(data) {
      this.thread.postMessage(data);
    }
    terminate() {
      this.thread.terminate();
    }
  };
}

function newSide() {
  return {
    returnCode: null,
    errors: [],
    clientMessages: 0,
    serverMessages: 0,
    firstServer: null,
    complete: null,
  };
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  globalThis.Worker = workerClass(args.insecure);

  const result = {
    server: `${args.protocol}://${args.host}`,
    node: process.version,
    library: `@m-lab/ndt7@${libVersion}`,
    download: newSide(),
    upload: newSide(),
  };
  const guard = setTimeout(() => {
    result.timeout = `run did not finish in ${overallTimeoutMs} ms`;
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    process.exit(1);
  }, overallTimeoutMs);

  let side = result.download;
  const record = (m) => {
    if (m.Source === 'server') {
      side.serverMessages++;
      if (side.firstServer === null) {
        side.firstServer = m.Data;
      }
    } else {
      side.clientMessages++;
    }
  };
  const callbacks = {
    error: (err) => side.errors.push(String(err)),
    downloadMeasurement: record,
    downloadComplete: (c) => {
      side.complete = c;
    },
    uploadMeasurement: record,
    uploadComplete: (c) => {
      side.complete = c;
    },
  };
  const config = {
    server: args.host,
    protocol: args.protocol,
    // Not an M-Lab server: M-Lab's data policy does not apply.
    mlabDataPolicyInapplicable: true,
    metadata: {client_name: 'sonde-ndt7-interop'},
    downloadworkerfile: require.resolve('@m-lab/ndt7/src/ndt7-download-worker.js'),
    uploadworkerfile: require.resolve('@m-lab/ndt7/src/ndt7-upload-worker.js'),
  };

  const urls = ndt7.discoverServerURLs(config, callbacks);
  result.download.returnCode = await ndt7.downloadTest(config, callbacks, urls);
  side = result.upload;
  result.upload.returnCode = await ndt7.uploadTest(config, callbacks, urls);
  clearTimeout(guard);

  process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  const ok = [result.download, result.upload].every(
      (s) => s.returnCode === 0 && s.errors.length === 0 && s.complete !== null);
  process.exit(ok ? 0 : 1);
}

main().catch((err) => {
  process.stderr.write(`run.js: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
