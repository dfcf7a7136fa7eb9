// Builds the chat widget into ONE file, src/heddle/web/static/widget/heddle-chat.js: an IIFE
// that defines window.HeddleChat, with pusher-js and the stylesheet inside (no CDN, no chunks).
// `node build.mjs --size` also prints the minified and gzipped sizes.
import { build } from "esbuild";
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";

const outfile = fileURLToPath(new URL("../../src/heddle/web/static/widget/heddle-chat.js", import.meta.url));
const { version } = JSON.parse(readFileSync(new URL("./package.json", import.meta.url)));

await build({
  entryPoints: [fileURLToPath(new URL("./src/index.js", import.meta.url))],
  outfile,
  bundle: true,
  format: "iife",
  minify: true,
  target: "es2020",
  platform: "browser",
  loader: { ".css": "text" },
  define: { __VERSION__: JSON.stringify(version) },
  legalComments: "eof",
  logLevel: "warning",
});

if (process.argv.includes("--size")) {
  const bytes = readFileSync(outfile);
  console.log(`heddle-chat.js: ${bytes.length} bytes minified, ${gzipSync(bytes, { level: 9 }).length} bytes gzipped`);
}
