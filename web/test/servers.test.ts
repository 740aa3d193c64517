import { test } from "node:test";
import assert from "node:assert/strict";
import { choices, nearest } from "../src/servers";

test("server list entries resolve to origins, this server first", () => {
  const cs = choices([
    { id: 1, name: "B", server: "//198.18.0.2:8080/" },
    { id: 2, name: "C", server: "https://198.18.0.3/sub/" },
    { id: 3, name: "dup", server: "http://198.18.0.2:8080/x" },
    { id: 4, name: "self", server: "http://198.18.0.1:8080/" },
    { id: 5, name: "ftp", server: "ftp://198.18.0.4/" },
    { id: 6, name: "js", server: "javascript:alert(1)" },
    { name: 7, server: "//198.18.0.5/" },
    null,
  ], "http://198.18.0.1:8080/?x=1");
  assert.deepEqual(cs.map((c) => [c.name, c.origin]), [["This server", ""], ["B", "http://198.18.0.2:8080"], ["C", "https://198.18.0.3"]]);
  assert.deepEqual(choices({ not: "a list" }, "http://h/").length, 1);
});

test("nearest picks the lowest measured RTT", () => {
  assert.equal(nearest([{ name: "a", origin: "", rttMs: 5 }, { name: "b", origin: "x", rttMs: 2 }, { name: "c", origin: "y", error: "no answer" }]), 1);
  assert.equal(nearest([{ name: "a", origin: "" }]), -1);
});
