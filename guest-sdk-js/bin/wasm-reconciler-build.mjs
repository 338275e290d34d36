#!/usr/bin/env node
// @ts-check
// `wasm-reconciler-build ENTRY [-o plugin.wasm] [--engine quickjs|starlingmonkey]`: bundles a plugin's compiled entry
// module with esbuild and turns it into a WebAssembly component against the WIT shipped in this package.
//
// The tools come from the project being built (its devDependencies), so their versions are pinned by its
// package-lock.json: esbuild, and componentize-qjs (QuickJS, the default) or @bytecodealliance/componentize-js
// (StarlingMonkey).

import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const WIT_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "wit");
const WORLD = "reconciler";
const HOST_IMPORT = "wasm-reconciler:plugin/host@0.1.0";
const ENGINES = {
  quickjs: { package: "componentize-qjs", version: "0.4.5" },
  starlingmonkey: { package: "@bytecodealliance/componentize-js", version: "0.23.0" },
};

const USAGE = "usage: wasm-reconciler-build ENTRY.js [-o plugin.wasm] [--engine quickjs|starlingmonkey]";

class BuildError extends Error {}

/** Loads a tool installed in the project being built (its ES module entry), or explains how to install it. */
async function projectTool(name, version) {
  for (let directory = process.cwd(); ; directory = dirname(directory)) {
    const root = join(directory, "node_modules", name);
    if (existsSync(join(root, "package.json"))) {
      const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
      return import(pathToFileURL(join(root, moduleEntry(manifest))).href);
    }
    if (dirname(directory) === directory) {
      throw new BuildError(
        `${name} is not installed in this project: npm install --save-dev --save-exact ${name}@${version}`,
      );
    }
  }
}

/** The file a package's manifest names for `import`. */
function moduleEntry(manifest) {
  const root = manifest.exports?.["."] ?? manifest.exports;
  const entry = typeof root === "string" ? root : (root?.import ?? root?.default ?? manifest.module ?? manifest.main);
  return typeof entry === "string" ? entry : (entry?.default ?? "index.js");
}

/** One ES module: the plugin's entry with the SDK installing the component's host imports first. */
async function bundle(entry, engine) {
  const esbuild = await projectTool("esbuild", "0.28.2");
  const hostImport =
    engine === "quickjs"
      ? `import witHost from "${HOST_IMPORT}";`
      : `import { log, get, list } from "${HOST_IMPORT}";\nconst witHost = { log, get, list };`;
  const controller =
    engine === "quickjs"
      ? `export { controller } from ${JSON.stringify(entry)};`
      : // StarlingMonkey's bindings carry a u64 as a BigInt.
        `import { controller as exported } from ${JSON.stringify(entry)};
export const controller = {
  describe: () => exported.describe(),
  reconcile(view) {
    const outcome = exported.reconcile(view);
    return { ...outcome, requeueAfterMs: outcome.requeueAfterMs === null ? undefined : BigInt(outcome.requeueAfterMs) };
  },
};`;
  const result = await esbuild.build({
    stdin: {
      contents: `${hostImport}\nimport { host } from "wasm-reconciler-sdk";\nhost.installHost(witHost);\n${controller}\n`,
      resolveDir: process.cwd(),
      sourcefile: "component-entry.js",
      loader: "js",
    },
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    external: ["wasm-reconciler:*"],
    write: false,
    logLevel: "warning",
  });
  return result.outputFiles[0].text;
}

async function componentize(source, engine) {
  const { package: name, version } = ENGINES[engine];
  let tool;
  try {
    tool = await projectTool(name, version);
  } catch (failure) {
    if (engine === "starlingmonkey" && String(failure).includes("@bytecodealliance/preview2-shim")) {
      throw new BuildError(
        `${name}@${version} needs @bytecodealliance/preview2-shim, which it does not declare: ` +
          "npm install --save-dev --save-exact @bytecodealliance/preview2-shim@0.17.9",
      );
    }
    throw failure;
  }
  if (engine === "quickjs") {
    const { component } = await tool.componentize({ witPath: WIT_DIR, jsSource: source, world: WORLD, sync: true });
    return component;
  }
  // StarlingMonkey's splicer sees only the working directory: stage the source and the WIT there.
  const scratch = mkdtempSync(join(process.cwd(), ".wasm-reconciler-build-"));
  try {
    writeFileSync(join(scratch, "plugin.js"), source);
    cpSync(WIT_DIR, join(scratch, "wit"), { recursive: true });
    const { component } = await tool.componentize({
      sourcePath: relative(process.cwd(), join(scratch, "plugin.js")),
      witPath: relative(process.cwd(), join(scratch, "wit")),
      worldName: WORLD,
      disableFeatures: ["http", "fetch-event"],
    });
    return component;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      output: { type: "string", short: "o", default: "plugin.wasm" },
      engine: { type: "string", default: "quickjs" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help || positionals.length !== 1) {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const engine = values.engine;
  if (engine !== "quickjs" && engine !== "starlingmonkey") {
    throw new BuildError(`unknown engine ${engine}: use quickjs or starlingmonkey`);
  }
  const entry = resolve(positionals[0]);
  const component = await componentize(await bundle(entry, engine), engine);
  writeFileSync(resolve(values.output), component);
  console.log(`${values.output}: ${component.length} bytes (${engine})`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(`error: ${error instanceof BuildError ? error.message : (error?.stack ?? error)}`);
    process.exit(1);
  },
);
