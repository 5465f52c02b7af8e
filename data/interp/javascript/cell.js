'use strict';
/*
 * bulkhead's JavaScript cell server: one persistent Node.js context behind
 * CELL.
 *
 * Started by bulkhead-init (PID 1 of the sandbox) as the sandbox user, cwd
 * /work, as `/usr/bin/node cell.js`, with
 *
 *   fd 0  /dev/null
 *   fd 1  stdout and fd 2 stderr: pipes the init reads for the whole life of
 *         this process, so output of subprocesses a cell starts is captured
 *         as well
 *   fd 3  requests from the init
 *   fd 4  replies to the init
 *
 * Protocol (the init's side is src/init/cell.c):
 *
 *   request, fd 3, one line:  {"nonce": "<32 hex>", "code": "<source>"}
 *   reply,   fd 4, one line:  {"nonce": "<same>", "status": "ok"|"error"}
 *
 * Exactly one reply per request, written only after the cell finished and
 * everything it printed was written out (the init drains the pipes after
 * the reply, so nothing is lost or reordered). Nothing else is ever written
 * to fd 4. "error" means the cell threw (or left a promise rejection or an
 * exception in a callback unhandled while it ran); the error went to stderr
 * and the context survives. EOF on fd 3 ends the server.
 *
 * Cells are scripts in one vm context. Top-level await works, and top-level
 * let/const/class/function/var become properties of the context's global
 * object, so a later cell may declare them again (rewritten with acorn, from
 * Debian's node-acorn). The value of a final expression statement is
 * printed with util.inspect unless it is undefined.
 */

const fs = require('fs');
const net = require('net');
const util = require('util');
const vm = require('vm');
const { Console } = require('console');
const { Writable } = require('stream');
const { createRequire } = require('module');

// Cells reach these modules through require() and may patch them; the
// server keeps the originals.
const { writeSync, openSync, closeSync } = fs;
const jsonParse = JSON.parse;
const jsonStringify = JSON.stringify;

const REQ_FD = 3;
const REP_FD = 4;
const SERVER_FILE = __filename;
const ACORN_PATHS = ['/usr/share/nodejs/acorn', 'acorn'];
const MAX_REQUEST = 1 << 30;

/* ---- descriptors ------------------------------------------------------ */

// Node has no fcntl(FD_CLOEXEC). Reopening the pipe through /proc gives a
// new descriptor, which libuv always opens close-on-exec; the inheritable
// original is closed, so child_process never passes the init's pipes on.
function privateFd(fd, flags) {
  try {
    const copy = openSync(`/proc/self/fd/${fd}`, flags);
    closeSync(fd);
    return copy;
  } catch (e) {
    writeAll(2, `bulkhead cell server: fd ${fd} stays inheritable: ${e.message}\n`);
    return fd;
  }
}

function pause(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

// fd 1 and 2 turn non-blocking once something touches process.stdout (libuv
// shares the open file description), so EAGAIN just means "wait a little".
function writeAll(fd, data) {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  let off = 0;
  while (off < buf.length) {
    try {
      off += writeSync(fd, buf, off, buf.length - off);
    } catch (e) {
      if (e.code === 'EAGAIN') {
        pause(1);
        continue;
      }
      throw e;
    }
  }
}

function syncStream(fd) {
  const stream = new Writable({
    decodeStrings: false,
    write(chunk, encoding, callback) {
      try {
        writeAll(fd, typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk);
      } catch (e) {
        callback(e);
        return;
      }
      callback();
    },
  });
  stream.fd = fd;
  stream.isTTY = false;
  return stream;
}

// process.stdout/stderr are created lazily by Node and write asynchronously
// when the pipe is full; remember them if a cell makes them, to wait for
// their queues before replying.
const lazyStdio = [];
for (const name of ['stdout', 'stderr']) {
  const desc = Object.getOwnPropertyDescriptor(process, name);
  if (!desc || typeof desc.get !== 'function') continue;
  let stream = null;
  Object.defineProperty(process, name, {
    configurable: true,
    enumerable: desc.enumerable,
    get() {
      if (!stream) {
        stream = desc.get.call(process);
        lazyStdio.push(stream);
      }
      return stream;
    },
  });
}

async function stdioDrained() {
  for (const stream of lazyStdio) {
    if (stream.writableLength > 0 && !stream.destroyed) {
      await new Promise((resolve) => {
        const done = () => {
          stream.off('drain', done);
          stream.off('error', done);
          stream.off('close', done);
          resolve();
        };
        stream.on('drain', done);
        stream.on('error', done);
        stream.on('close', done);
      });
    }
  }
}

const out = syncStream(1);
const err = syncStream(2);
const cellConsole = new Console({ stdout: out, stderr: err, colorMode: false });
// Modules loaded with require() run in this realm and log through it.
globalThis.console = cellConsole;

/* ---- the rewrite ------------------------------------------------------ */

let acorn = null;
for (const p of ACORN_PATHS) {
  try {
    acorn = require(p);
    break;
  } catch (e) {
    /* next */
  }
}

function patternNames(node, names) {
  if (!node) return;
  switch (node.type) {
    case 'Identifier':
      names.add(node.name);
      break;
    case 'ObjectPattern':
      for (const p of node.properties) patternNames(p.type === 'RestElement' ? p.argument : p.value, names);
      break;
    case 'ArrayPattern':
      for (const e of node.elements) patternNames(e, names);
      break;
    case 'RestElement':
      patternNames(node.argument, names);
      break;
    case 'AssignmentPattern':
      patternNames(node.left, names);
      break;
    default:
      break;
  }
}

// Declarations become assignments to names declared with `var` at the top
// of the script, which makes them properties of the context's global
// object: the only kind of binding a later script may declare again.
function rewriteDeclaration(code, node, edits, names, inForHead) {
  for (const d of node.declarations) patternNames(d.id, names);
  if (inForHead) {
    // `for (let i = 0; ...)`, `for (const k of o)`: only the keyword goes.
    edits.push({ start: node.start, end: node.start + node.kind.length, text: '' });
    return;
  }
  edits.push({ start: node.start, end: node.start + node.kind.length, text: 'void (' });
  if (node.kind !== 'var') {
    for (const d of node.declarations) {
      if (!d.init) edits.push({ start: d.id.end, end: d.id.end, text: ' = undefined' });
    }
  }
  const semi = code[node.end - 1] === ';';
  const at = semi ? node.end - 1 : node.end;
  edits.push({ start: at, end: at, text: ')' });
  if (!semi) edits.push({ start: at, end: at, text: ';' });
}

// `var` anywhere outside functions is function-scoped: inside the wrapper
// it would belong to the wrapper, so nested ones are rewritten too. Nested
// let/const keep their block scope.
function walkNested(code, node, edits, names) {
  if (!node || typeof node.type !== 'string') return;
  const nested = (n) => walkNested(code, n, edits, names);
  switch (node.type) {
    case 'VariableDeclaration':
      if (node.kind === 'var') rewriteDeclaration(code, node, edits, names, false);
      break;
    case 'BlockStatement':
      node.body.forEach(nested);
      break;
    case 'IfStatement':
      nested(node.consequent);
      nested(node.alternate);
      break;
    case 'ForStatement':
      if (node.init && node.init.type === 'VariableDeclaration' && node.init.kind === 'var')
        rewriteDeclaration(code, node.init, edits, names, true);
      nested(node.body);
      break;
    case 'ForInStatement':
    case 'ForOfStatement':
      if (node.left.type === 'VariableDeclaration' && node.left.kind === 'var')
        rewriteDeclaration(code, node.left, edits, names, true);
      nested(node.body);
      break;
    case 'WhileStatement':
    case 'DoWhileStatement':
    case 'LabeledStatement':
      nested(node.body);
      break;
    case 'TryStatement':
      nested(node.block);
      if (node.handler) nested(node.handler.body);
      nested(node.finalizer);
      break;
    case 'SwitchStatement':
      for (const c of node.cases) c.consequent.forEach(nested);
      break;
    default:
      break;
  }
}

// At one position, insertions go before a replacement that starts there;
// otherwise the order they were made in is kept (the sort is stable).
function applyEdits(code, edits) {
  const width = (e) => (e.end > e.start ? 1 : 0);
  edits.sort((a, b) => a.start - b.start || width(a) - width(b));
  let pos = 0;
  let res = '';
  for (const e of edits) {
    res += code.slice(pos, e.start) + e.text;
    pos = e.end;
  }
  return res + code.slice(pos);
}

// The whole cell becomes one line-preserving script:
//   var <declared names>; (async function (<g>) { <cell> }).call(globalThis, globalThis)
// with the final expression statement turned into `return (<expr>)`.
const PARSE_OPTIONS = {
  ecmaVersion: 'latest',
  sourceType: 'script',
  allowAwaitOutsideFunction: true,
  allowHashBang: true,
};

function rewrite(code) {
  const ast = acorn.parse(code, PARSE_OPTIONS);
  const names = new Set();
  const functions = [];
  const edits = [];
  const body = ast.body;
  if (code.startsWith('#!')) edits.push({ start: 0, end: 2, text: '//' });

  let prologueEnd = 0;
  for (const node of body) {
    if (node.type !== 'ExpressionStatement' || node.directive === undefined) break;
    prologueEnd = node.end;
  }
  const last = body.length ? body[body.length - 1] : null;
  for (const node of body) {
    switch (node.type) {
      case 'VariableDeclaration':
        rewriteDeclaration(code, node, edits, names, false);
        break;
      case 'FunctionDeclaration':
        names.add(node.id.name);
        functions.push(node.id.name);
        break;
      case 'ClassDeclaration':
        names.add(node.id.name);
        edits.push({ start: node.start, end: node.start, text: `${node.id.name} = ` });
        edits.push({ start: node.end, end: node.end, text: ';' });
        break;
      case 'ForStatement':
        if (node.init && node.init.type === 'VariableDeclaration' && node.init.kind === 'var')
          rewriteDeclaration(code, node.init, edits, names, true);
        walkNested(code, node.body, edits, names);
        break;
      case 'ForInStatement':
      case 'ForOfStatement':
        if (node.left.type === 'VariableDeclaration' && node.left.kind === 'var')
          rewriteDeclaration(code, node.left, edits, names, true);
        walkNested(code, node.body, edits, names);
        break;
      default:
        walkNested(code, node, edits, names);
        break;
    }
  }
  const G = '__bulkhead_global__';
  if (last && last.type === 'ExpressionStatement' && !(last.directive === 'use strict')) {
    // The statement's own span keeps the parentheses of `({a: 1})`, which
    // the expression's span leaves out; only a final semicolon is dropped.
    const semi = code[last.end - 1] === ';';
    edits.push({ start: last.start, end: last.start, text: 'return (' });
    edits.push({ start: semi ? last.end - 1 : last.end, end: semi ? last.end - 1 : last.end, text: '\n)' });
  }
  // Function declarations are hoisted inside the wrapper; publishing them
  // first thing (after any "use strict") keeps them callable from the
  // whole cell and makes them globals for later cells.
  // Without directives that goes in the head, where columnOffset hides it
  // from stack traces.
  const publish = functions.map((n) => `${G}.${n} = ${n}; `).join('');
  if (publish && prologueEnd > 0) edits.push({ start: prologueEnd, end: prologueEnd, text: ' ' + publish });
  const head =
    (names.size ? `var ${[...names].join(', ')}; ` : '') +
    `(async function (${G}) {` +
    (prologueEnd > 0 ? '' : publish);
  const src = head + applyEdits(code, edits) + `\n}).call(globalThis, globalThis)`;
  return { src, columnOffset: -head.length };
}

// Without acorn: top-level await through a plain wrapper (its declarations
// then stay local to the cell), otherwise the cell as a script whose
// line-leading let/const are turned into var so they may be declared again.
function rewriteWithoutParser(code) {
  const asScript = code.replace(/^([ \t]*)(?:let|const)(\s+)(?=[A-Za-z_$[{])/gm, '$1var$2');
  try {
    new vm.Script(asScript);
    return { src: asScript, columnOffset: 0, plain: true };
  } catch (e) {
    if (!/await/.test(String(e && e.message))) throw e;
  }
  const head = '(async function () {';
  return { src: head + code + '\n}).call(globalThis)', columnOffset: -head.length };
}

/* ---- the context ------------------------------------------------------ */

// Headers, Request, Response and FormData are Node's undici: the first
// read of any of them loads it, some 40 ms of CPU and 10 MiB on the host
// (more under gVisor) that every sandbox paid at start although few cells
// fetch. They are accessors on the context's global until a cell reads or
// assigns one; then they become the plain data property they were.
function lazyGlobal(target, name) {
  const settle = (value) =>
    Object.defineProperty(target, name, { value, writable: true, enumerable: true, configurable: true });
  Object.defineProperty(target, name, {
    configurable: true,
    enumerable: true,
    get() {
      const value = globalThis[name];
      settle(value);
      return value;
    },
    set(value) {
      settle(value);
    },
  });
}

const sandboxGlobal = {
  console: cellConsole,
  process,
  require: createRequire('/work/'),
  Buffer,
  URL,
  URLSearchParams,
  TextEncoder,
  TextDecoder,
  AbortController,
  AbortSignal,
  EventTarget,
  Event,
  Blob: globalThis.Blob,
  atob,
  btoa,
  structuredClone,
  queueMicrotask,
  setTimeout,
  setInterval,
  setImmediate,
  clearTimeout,
  clearInterval,
  clearImmediate,
  performance: globalThis.performance,
  crypto: globalThis.crypto,
  // fetch itself is a small function that loads undici when called.
  fetch: globalThis.fetch,
  MessageChannel: globalThis.MessageChannel,
  __dirname: '/work',
  __filename: '/work/[cell]',
};
for (const name of ['Headers', 'Request', 'Response', 'FormData']) lazyGlobal(sandboxGlobal, name);
const context = vm.createContext(sandboxGlobal, { name: 'cell' });
vm.runInContext('globalThis.global = globalThis;', context);

// Frames below the outermost cell frame are the server's own (and the
// wrapper's call, one line past the cell's last line): the user's story
// ends at their code.
function cleanStack(stack, cell) {
  const lines = stack.split('\n');
  let lastCell = -1;
  lines.forEach((l, i) => {
    if (/^\s+at .*<cell-\d+>:\d+:\d+\)?$/.test(l)) lastCell = i;
  });
  // Without a cell frame the error came from the server's own call into
  // vm (a declaration clash, say): Node's internal frames say nothing.
  let kept = lastCell >= 0 ? lines.slice(0, lastCell + 1) : lines.filter((l) => !/^\s+at (.*\()?node:/.test(l));
  if (cell && kept.length) {
    const m = /<cell-(\d+)>:(\d+):\d+\)?$/.exec(kept[kept.length - 1]);
    if (m && Number(m[1]) === cell.number && Number(m[2]) > lineCount(cell.code)) kept.pop();
  }
  kept = kept.filter((l) => !(l.includes(SERVER_FILE) || /\bnode:vm:|node:internal\/vm|Script\.runInContext/.test(l)));
  return kept.join('\n');
}

function lineCount(code) {
  let n = 1;
  for (let at = code.indexOf('\n'); at >= 0; at = code.indexOf('\n', at + 1)) n++;
  return n;
}

function describe(e) {
  if (e && (typeof e === 'object' || typeof e === 'function') && typeof e.stack === 'string' && e.stack) {
    return cleanStack(e.stack, current);
  }
  try {
    return 'Uncaught ' + util.inspect(e, { depth: 4 });
  } catch (inner) {
    return 'Uncaught exception';
  }
}

function syntaxReport(e, code, filename) {
  if (!e || !e.loc) return describe(e);
  const line = code.split('\n')[e.loc.line - 1] || '';
  const message = String(e.message).replace(/ \(\d+:\d+\)$/, '');
  return `${filename}:${e.loc.line}\n${line}\n${' '.repeat(e.loc.column)}^\n\nSyntaxError: ${message}`;
}

let cellCount = 0;
let current = null; // the running cell's collected asynchronous failures

function onStray(e) {
  if (current) {
    current.failures.push(e);
    return;
  }
  // Between cells: stale by then; the init discards it before the next one.
  writeAll(2, describe(e) + '\n');
}
process.on('unhandledRejection', onStray);
process.on('uncaughtException', onStray);

function nextMacrotask() {
  return new Promise((resolve) => setImmediate(resolve));
}

async function runCell(code) {
  const filename = `<cell-${++cellCount}>`;
  // The line count is needed only for an error's stack: counted then, not
  // by splitting every cell into an array of lines up front.
  current = { failures: [], number: cellCount, code };
  let ok = true;
  try {
    let prepared;
    try {
      prepared = acorn ? rewrite(code) : rewriteWithoutParser(code);
    } catch (e) {
      if (!(e instanceof SyntaxError) || !acorn) throw e;
      // Newer syntax than this acorn knows: V8 may still take the cell
      // as a plain script.
      try {
        new vm.Script(code, { filename });
        prepared = { src: code, columnOffset: 0, plain: true };
      } catch (e2) {
        e.report = syntaxReport(e, code, filename);
        throw e;
      }
    }
    let script;
    try {
      script = new vm.Script(prepared.src, { filename, columnOffset: prepared.columnOffset });
    } catch (e) {
      // A compile error has no frames worth showing: only the server's.
      if (e && typeof e.stack === 'string') e.report = e.stack.split('\n').filter((l) => !/^\s+at /.test(l)).join('\n');
      throw e;
    }
    let value = script.runInContext(context, { displayErrors: false });
    // A plain script (no parser) answers with its completion value, as
    // Node's REPL does.
    if (!prepared.plain) value = await value;
    // Rejections and callback exceptions surface on the next turns.
    await nextMacrotask();
    await nextMacrotask();
    if (value !== undefined) writeAll(1, util.inspect(value, { depth: 4 }) + '\n');
  } catch (e) {
    ok = false;
    writeAll(2, (e && e.report ? e.report : describe(e)) + '\n');
  }
  if (current.failures.length) {
    ok = false;
    for (const f of current.failures) writeAll(2, describe(f) + '\n');
  }
  current = null;
  return ok;
}

/* ---- the request loop ------------------------------------------------- */

const reqFd = privateFd(REQ_FD, fs.constants.O_RDONLY);
const repFd = privateFd(REP_FD, fs.constants.O_WRONLY);

function reply(nonce, ok) {
  writeAll(repFd, jsonStringify({ nonce, status: ok ? 'ok' : 'error' }) + '\n');
}

const queue = [];
let busy = false;

async function serve() {
  if (busy) return;
  busy = true;
  while (queue.length) {
    const line = queue.shift();
    let req;
    try {
      req = jsonParse(line);
      if (typeof req.nonce !== 'string' || typeof req.code !== 'string') throw new Error('nonce and code must be strings');
    } catch (e) {
      // Without a nonce there is no valid reply: ending is the only honest
      // answer, and the init reports the exit status.
      writeAll(2, `bulkhead cell server: bad request: ${e.message}\n`);
      process.exit(2);
    }
    let ok = false;
    try {
      ok = await runCell(req.code);
      await stdioDrained();
    } catch (e) {
      writeAll(2, `bulkhead cell server: ${describe(e)}\n`);
    }
    reply(req.nonce, ok);
  }
  busy = false;
}

const input = new net.Socket({ fd: reqFd, readable: true, writable: false });
let pending = [];
let pendingLength = 0;
input.on('data', (chunk) => {
  let start = 0;
  let nl;
  while ((nl = chunk.indexOf(10, start)) >= 0) {
    // A line within one chunk (the usual case) is decoded in place, not
    // copied into a concatenation first.
    if (pending.length) {
      pending.push(chunk.subarray(start, nl));
      queue.push(Buffer.concat(pending).toString('utf8'));
    } else {
      queue.push(chunk.toString('utf8', start, nl));
    }
    pending = [];
    pendingLength = 0;
    start = nl + 1;
  }
  if (start < chunk.length) {
    pending.push(chunk.subarray(start));
    pendingLength += chunk.length - start;
    if (pendingLength > MAX_REQUEST) {
      writeAll(2, 'bulkhead cell server: request line too long\n');
      process.exit(2);
    }
  }
  serve();
});
input.on('end', () => process.exit(0));
input.on('error', (e) => {
  writeAll(2, `bulkhead cell server: reading requests: ${e.message}\n`);
  process.exit(2);
});
