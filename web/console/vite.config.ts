// Builds the console into the Python package, where heddle serve finds it (src/heddle/web/routes.py).
// base /console/ and hashed files under assets/; no inline script or style (the CSP forbids them).
import { defineConfig } from "vite";

export default defineConfig({
  base: "/console/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: "../../src/heddle/web/static/console",
    emptyOutDir: true,
    assetsDir: "assets",
    // Never inline small assets as data: URLs in CSS/JS; everything is a file of our own origin.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: "es2022",
  },
});
