// live.js checkFile: a model file is used only if its size and SHA-256 are the manifest's.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fixtures, loadStatic, NO_FIXTURES } from "./load.mjs";

const F = fixtures();
const { checkFile } = await loadStatic(["_random.js", "live_decode.js", "live.js"], ["checkFile"]);

test("a file is checked against the SHA-256 Python computed", { skip: F ? false : NO_FIXTURES }, async () => {
  for (const c of F.files) {
    const bytes = Uint8Array.from(c.bytes), f = { bytes: bytes.length, sha256: c.sha256 };
    assert.equal(await checkFile(bytes, f, "x.onnx"), bytes);
    const changed = bytes.slice();
    changed[10] ^= 1;
    await assert.rejects(checkFile(changed, f, "x.onnx"), new RegExp(`x\\.onnx has SHA-256 [0-9a-f]{64}, the ` +
      `manifest says ${c.sha256}: the export is damaged or stale \\(rebuild the book with make live-models\\)`));
    await assert.rejects(checkFile(bytes.slice(1), f, "x.onnx"),
      new RegExp(`x\\.onnx has ${bytes.length - 1} bytes, the manifest says ${bytes.length}`));
  }
});
