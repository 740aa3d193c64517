// One bare stream: count bytes and nothing else. Posts {bytes} when done.
onmessage = async (ev) => {
  const { mode, duration } = ev.data;
  const end = performance.now() + duration * 1000;
  const base = `${location.host}`;
  let bytes = 0;
  try {
    if (mode === "ws-down") {
      await new Promise((resolve, reject) => {
        const ws = new WebSocket(`ws://${base}/ws?dir=down&duration=${duration}`);
        ws.binaryType = "arraybuffer";
        ws.onmessage = (e) => { bytes += e.data.byteLength; };
        ws.onclose = resolve;
        ws.onerror = () => reject(new Error("WebSocket failed"));
      });
    } else if (mode === "ws-up") {
      await new Promise((resolve, reject) => {
        const ws = new WebSocket(`ws://${base}/ws?dir=up`);
        const msg = new Uint8Array(256 << 10);
        ws.onopen = () => {
          const fill = () => {
            if (performance.now() >= end) { ws.close(1000); resolve(); return; }
            while (ws.bufferedAmount < (8 << 20)) { ws.send(msg); bytes += msg.length; }
            setTimeout(fill, 1);
          };
          fill();
        };
        ws.onerror = () => reject(new Error("WebSocket failed"));
      });
    } else if (mode === "fetch-down") {
      const r = await fetch(`/down?duration=${duration}`);
      const rd = r.body.getReader({ mode: "byob" });
      let buf = new ArrayBuffer(1 << 20);
      for (;;) {
        const { done, value } = await rd.read(new Uint8Array(buf));
        if (done) break;
        bytes += value.byteLength;
        buf = value.buffer;
      }
    } else if (mode === "fetch-up") {
      const blob = new Blob([new Uint8Array(16 << 20)]);
      while (performance.now() < end) {
        const r = await fetch("/up", { method: "POST", body: blob });
        await r.arrayBuffer();
        bytes += blob.size;
      }
    } else throw new Error(`unknown mode ${mode}`);
    postMessage({ bytes });
  } catch (e) {
    postMessage({ error: e.message });
  }
};
