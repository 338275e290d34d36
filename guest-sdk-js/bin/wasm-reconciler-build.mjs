#!/usr/bin/env node
// @ts-check
// `wasm-reconciler-build ENTRY [-o plugin.wasm] [--contract 0.1|0.2] [--engine quickjs|starlingmonkey]`: bundles a
// plugin's compiled entry module with esbuild and turns it into a WebAssembly component against the WIT shipped in
// this package: `wit/` for contract 0.1 (the default), `wit-v0.2/` for contract 0.2.
//
// The tools come from the project being built (its devDependencies), so their versions are pinned by its
// package-lock.json: esbuild, and componentize-qjs (QuickJS, the default) or @bytecodealliance/componentize-js
// (StarlingMonkey).
//
// The entry module the build generates installs the component's imports into the SDK, and only the imports of the
// chosen contract: a 0.1 component imports the host interface alone; a 0.2 component imports `variables` too and,
// built with StarlingMonkey, `wasi:http/outgoing-handler` (handed to `wasm-reconciler-sdk/wasi-http`). QuickJS builds
// of contract 0.2 leave `wasi:http` out: componentize-qjs 0.4.5 cannot componentize a world importing it (during
// its build-time initialization it stubs `wasi:http/types` with resource types that do not match the `wasi:io`
// resources it links for real, and refuses to instantiate the component).

import { cpSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const SDK_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const HOST_IMPORT = "wasm-reconciler:plugin/host@0.1.0";
const VARIABLES_IMPORT = "wasm-reconciler:plugin/variables@0.2.0";
const OUTGOING_HANDLER_IMPORT = "wasi:http/outgoing-handler@0.2.12";
const HTTP_TYPES_IMPORT = "wasi:http/types@0.2.12";
/** Per contract version: the WIT directory and the world each engine builds. */
const CONTRACTS = {
  "0.1": { wit: join(SDK_ROOT, "wit"), worlds: { quickjs: "reconciler", starlingmonkey: "reconciler" } },
  "0.2": {
    wit: join(SDK_ROOT, "wit-v0.2"),
    worlds: { quickjs: "reconciler", starlingmonkey: "reconciler-with-http" },
  },
};
const ENGINES = {
  quickjs: { package: "componentize-qjs", version: "0.4.5" },
  starlingmonkey: { package: "@bytecodealliance/componentize-js", version: "0.23.0" },
};

const USAGE =
  "usage: wasm-reconciler-build ENTRY.js [-o plugin.wasm] [--contract 0.1|0.2] [--engine quickjs|starlingmonkey]";

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

/** The SDK modules that need contract 0.2 imports, and what a build that lacks them should say. */
const NEEDS = {
  http: { module: join(SDK_ROOT, "dist", "src", "http.js"), api: "http" },
  variables: { module: join(SDK_ROOT, "dist", "src", "variables.js"), api: "variables" },
};

/**
 * The statements that install the component's imports into the SDK, for one engine and contract. QuickJS binds an
 * interface as its module's default export; StarlingMonkey as named exports, and a WIT `u64` as a BigInt.
 */
function installImports(engine, contract) {
  const lines = [];
  const sdk = ["host"];
  if (engine === "quickjs") {
    lines.push(`import witHost from "${HOST_IMPORT}";`);
  } else {
    lines.push(`import { log as witLog, get as witGet, list as witList } from "${HOST_IMPORT}";`);
    lines.push("const witHost = { log: witLog, get: witGet, list: witList };");
  }
  if (contract === "0.2") {
    sdk.push("variables");
    if (engine === "quickjs") {
      lines.push(`import witVariables from "${VARIABLES_IMPORT}";`);
    } else {
      lines.push(`import { get as witVariable } from "${VARIABLES_IMPORT}";`);
      lines.push("const witVariables = { get: witVariable };");
    }
  }
  const http = contract === "0.2" && engine === "starlingmonkey";
  if (http) {
    sdk.push("http");
    lines.push(`import { handle as witHandle } from "${OUTGOING_HANDLER_IMPORT}";`);
    lines.push(
      "import { Fields, OutgoingRequest, RequestOptions, OutgoingBody, IncomingBody, httpErrorCode } " +
        `from "${HTTP_TYPES_IMPORT}";`,
    );
    lines.push('import { wasiHttpBackend } from "wasm-reconciler-sdk/wasi-http";');
  }
  lines.push(`import { ${sdk.join(", ")} } from "wasm-reconciler-sdk";`);
  lines.push("host.installHost(witHost);");
  if (contract === "0.2") {
    lines.push("variables.installVariables(witVariables);");
  }
  if (http) {
    lines.push(
      "http.installHttp(wasiHttpBackend({ outgoingHandler: { handle: witHandle }, types: { Fields, " +
        'OutgoingRequest, RequestOptions, OutgoingBody, IncomingBody, httpErrorCode }, u64: "bigint" }));',
    );
  }
  return lines.join("\n");
}

/** One ES module: the plugin's entry with the SDK installing the component's imports first. */
async function bundle(entry, engine, contract) {
  const esbuild = await projectTool("esbuild", "0.28.2");
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
      contents: `${installImports(engine, contract)}\n${controller}\n`,
      resolveDir: process.cwd(),
      sourcefile: "component-entry.js",
      loader: "js",
    },
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    external: ["wasm-reconciler:*", "wasi:*"],
    write: false,
    metafile: true,
    logLevel: "warning",
  });
  warnAboutMissingImports(result.metafile, engine, contract);
  return result.outputFiles[0].text;
}

/**
 * Warns when the plugin uses an SDK module whose imports this build leaves out: its calls would fail in the
 * component. Only the plugin's own use counts: the generated entry references a module only when it installs it.
 */
function warnAboutMissingImports(metafile, engine, contract) {
  const bundled = new Set();
  for (const output of Object.values(metafile.outputs)) {
    for (const [path, input] of Object.entries(output.inputs)) {
      if (input.bytesInOutput > 0) {
        bundled.add(realPath(resolve(process.cwd(), path)));
      }
    }
  }
  const uses = (need) => bundled.has(realPath(need.module));
  if (contract === "0.1") {
    for (const need of [NEEDS.variables, NEEDS.http]) {
      if (uses(need)) {
        console.warn(
          `warning: the plugin uses the SDK's \`${need.api}\` module, which needs contract 0.2: its calls fail ` +
            "in a 0.1 component (build with --contract 0.2)",
        );
      }
    }
  } else if (engine === "quickjs" && uses(NEEDS.http)) {
    console.warn(
      "warning: the plugin uses the SDK's `http` module, but componentize-qjs cannot build a component importing " +
        "wasi:http, so its requests fail in this component: build with --engine starlingmonkey",
    );
  }
}

function realPath(path) {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

async function componentize(source, engine, contract) {
  const { wit, worlds } = CONTRACTS[contract];
  const world = worlds[engine];
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
    const { component } = await tool.componentize({ witPath: wit, jsSource: source, world, sync: true });
    return component;
  }
  // StarlingMonkey's splicer sees only the working directory: stage the source and the WIT there.
  const scratch = mkdtempSync(join(process.cwd(), ".wasm-reconciler-build-"));
  try {
    writeFileSync(join(scratch, "plugin.js"), source);
    cpSync(wit, join(scratch, "wit"), { recursive: true });
    const { component } = await tool.componentize({
      sourcePath: relative(process.cwd(), join(scratch, "plugin.js")),
      witPath: relative(process.cwd(), join(scratch, "wit")),
      worldName: world,
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
      contract: { type: "string", default: "0.1" },
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
  const contract = values.contract;
  if (contract !== "0.1" && contract !== "0.2") {
    throw new BuildError(`unknown contract ${contract}: use 0.1 or 0.2`);
  }
  const entry = resolve(positionals[0]);
  const component = await componentize(await bundle(entry, engine, contract), engine, contract);
  writeFileSync(resolve(values.output), component);
  console.log(`${values.output}: ${component.length} bytes (${engine}, contract ${contract})`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(`error: ${error instanceof BuildError ? error.message : (error?.stack ?? error)}`);
    process.exit(1);
  },
);
