#!/usr/bin/env node
// An OpenAI-compatible chat-completions server around node-llama-cpp, so that a real small model (a GGUF
// file on disk) answers kindgi-eval exactly as vLLM or Ollama would: litellm reaches it as `openai:<name>`
// with OPENAI_BASE_URL=http://127.0.0.1:<port>/v1 and any OPENAI_API_KEY. Touches one file (the model) and
// one socket (127.0.0.1 only); the product knows nothing of it.
//
//   node server.js [--model PATH] [--name NAME] [--port N] [--threads N] [--parallel N] [--context N]
//                  [--max-tokens N] [--temperature T] [--top-p P]          (--help lists them with their variables)
//
// The defaults (one thread, one request at a time, 256 answer tokens when none is asked for) were measured on
// a 2-core machine: deploy/real-judge/README.md gives the figures.
//
// Routes: POST /v1/chat/completions (no streaming, n = 1), GET /v1/models, GET /healthz.
// `response_format` is honoured as sent: `json_schema` constrains the answer to that schema with
// node-llama-cpp's JSON-schema grammar, `json_object` to any JSON object, `text` or none leaves it free.
// Nothing else is ever constrained: a request that sends no response_format gets the model's own words.
// Prints one ready line on standard output once the model is loaded; SIGTERM or SIGINT stops it.

import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import {fileURLToPath} from "node:url";
import {parseArgs} from "node:util";

import {getLlama, LlamaChat} from "node-llama-cpp";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DEFAULT_MODEL = path.join(HERE, "cache", "SmolLM2-135M-Instruct.Q4_1.gguf");
const MAX_BODY_BYTES = 4 * 1024 * 1024;

// ---- settings: a flag overrides its variable, which overrides the default --------------------------------

const SETTINGS = {
    model: {env: "REAL_JUDGE_MODEL", fallback: DEFAULT_MODEL, help: "the GGUF file"},
    name: {env: "REAL_JUDGE_NAME", fallback: "smollm2-135m-instruct", help: "the model id clients ask for"},
    port: {env: "REAL_JUDGE_PORT", fallback: "8088", help: "the port on 127.0.0.1 (0: any free one)", int: true, min: 0, max: 65535},
    threads: {env: "REAL_JUDGE_THREADS", fallback: "1", help: "CPU threads for evaluation", int: true, min: 1},
    parallel: {env: "REAL_JUDGE_PARALLEL", fallback: "1", help: "requests evaluated at once (one batch)", int: true, min: 1},
    context: {env: "REAL_JUDGE_CONTEXT", fallback: "4096", help: "tokens of context per request", int: true, min: 256},
    "max-tokens": {env: "REAL_JUDGE_MAX_TOKENS", fallback: "256", help: "answer length when max_tokens is not sent", int: true, min: 1},
    temperature: {env: "REAL_JUDGE_TEMPERATURE", fallback: "0.2", help: "temperature when none is sent", num: true, min: 0, max: 2},
    "top-p": {env: "REAL_JUDGE_TOP_P", fallback: "0.9", help: "top_p when none is sent", num: true, min: 0, max: 1},
};

function readSettings(argv, env) {
    const options = Object.fromEntries(Object.keys(SETTINGS).map((k) => [k, {type: "string"}]));
    const {values} = parseArgs({args: argv, options: {...options, help: {type: "boolean"}}, strict: true});
    if (values.help) {
        const lines = Object.entries(SETTINGS).map(
            ([k, s]) => `  --${k.padEnd(12)} ${s.help} (${s.env}; default ${s.fallback})`,
        );
        process.stdout.write(`usage: node server.js [options]\n${lines.join("\n")}\n`);
        process.exit(0);
    }
    const settings = {};
    for (const [key, spec] of Object.entries(SETTINGS)) {
        const raw = values[key] ?? env[spec.env] ?? spec.fallback;
        const value = spec.int || spec.num ? Number(raw) : raw;
        if ((spec.int && !Number.isInteger(value)) || (spec.num && !Number.isFinite(value)) || value === "" ||
            (spec.min != null && value < spec.min) || (spec.max != null && value > spec.max)) {
            const kind = spec.int ? "an integer" : spec.num ? "a number" : "a value";
            const range = [spec.min != null && `at least ${spec.min}`, spec.max != null && `at most ${spec.max}`].filter(Boolean);
            throw new Error(`--${key} (${spec.env}): ${JSON.stringify(raw)} is not valid. Give ${kind}` +
                `${range.length ? " " + range.join(" and ") : ""}: ${spec.help}.`);
        }
        settings[key] = value;
    }
    return settings;
}

// ---- pure: an OpenAI request as node-llama-cpp's chat history and generation options -----------------------

class RequestError extends Error {
    constructor(status, message, {param = null, code = null, type = "invalid_request_error"} = {}) {
        super(message);
        this.status = status;
        this.param = param;
        this.code = code;
        this.type = type;
    }
}

function textOf(content, where) {
    if (typeof content === "string") return content;
    if (Array.isArray(content) && content.every((p) => p && p.type === "text" && typeof p.text === "string")) {
        return content.map((p) => p.text).join("");
    }
    throw new RequestError(400, `${where}: content must be a string or a list of text parts.`, {param: where});
}

/** The request's messages as a chat history that ends in the (empty) model turn to be generated. */
function chatHistory(messages) {
    if (!Array.isArray(messages) || messages.length === 0) {
        throw new RequestError(400, "messages: a non-empty list is required.", {param: "messages"});
    }
    const history = messages.map((m, i) => {
        const where = `messages[${i}]`;
        const text = textOf(m?.content, `${where}.content`);
        switch (m?.role) {
            case "system":
            case "developer":
                return {type: "system", text};
            case "user":
                return {type: "user", text};
            case "assistant":
                return {type: "model", response: [text]};
            default:
                throw new RequestError(400, `${where}.role: ${JSON.stringify(m?.role)} is not supported here ` +
                    "(system, developer, user and assistant are; this server offers no tools).", {param: `${where}.role`});
        }
    });
    // A trailing assistant message is a prefix to continue, as in llama.cpp's server; otherwise a new turn.
    if (history.at(-1).type !== "model") history.push({type: "model", response: []});
    return history;
}

function number(body, key, {min, max, integer = false} = {}) {
    const value = body[key];
    if (value == null) return undefined;
    if (typeof value !== "number" || !Number.isFinite(value) || (integer && !Number.isInteger(value)) ||
        (min != null && value < min) || (max != null && value > max)) {
        throw new RequestError(400, `${key}: ${JSON.stringify(value)} is out of range.`, {param: key});
    }
    return value;
}

/** What to generate, from the request's own parameters and the server's defaults where it sent none. */
function generationOptions(body, settings) {
    if (body.stream) throw new RequestError(400, "stream: streaming is not supported by this server.", {param: "stream"});
    if ((number(body, "n", {min: 1, integer: true}) ?? 1) !== 1) {
        throw new RequestError(400, "n: only one choice per request is supported.", {param: "n"});
    }
    if (body.tools?.length || body.functions?.length) {
        throw new RequestError(400, "tools: this server offers no tool calls.", {param: "tools"});
    }
    const stop = body.stop == null ? [] : Array.isArray(body.stop) ? body.stop : [body.stop];
    if (!stop.every((s) => typeof s === "string" && s !== "")) {
        throw new RequestError(400, "stop: a string or a list of strings is required.", {param: "stop"});
    }
    return {
        maxTokens: number(body, "max_completion_tokens", {min: 1, integer: true}) ??
            number(body, "max_tokens", {min: 1, integer: true}) ?? settings["max-tokens"],
        temperature: number(body, "temperature", {min: 0, max: 2}) ?? settings.temperature,
        topP: number(body, "top_p", {min: 0, max: 1}) ?? settings["top-p"],
        seed: number(body, "seed", {integer: true}),
        customStopTriggers: stop.length ? stop : undefined,
    };
}

/** The kind of constraint `response_format` asks for: null (free text), {json: true} or {schema}. */
function requestedFormat(format) {
    if (format == null) return null;
    switch (format.type) {
        case "text":
            return null;
        case "json_object":
            return {json: true};
        case "json_schema": {
            const schema = format.json_schema?.schema;
            if (schema == null || typeof schema !== "object") {
                throw new RequestError(400, "response_format.json_schema.schema: a JSON schema object is required.",
                    {param: "response_format"});
            }
            return {schema};
        }
        default:
            throw new RequestError(400, `response_format.type: ${JSON.stringify(format.type)} is not one of text, ` +
                "json_object, json_schema.", {param: "response_format"});
    }
}

// ---- the model: sequences of one context, lent to one request at a time ----------------------------------

class Pool {
    constructor(items) {
        this.free = [...items];
        this.waiting = [];
    }

    /** A free item, waiting for one if need be; rejects if `signal` aborts first. */
    acquire(signal) {
        if (this.free.length) return Promise.resolve(this.free.pop());
        return new Promise((resolve, reject) => {
            const waiter = {resolve, reject};
            this.waiting.push(waiter);
            signal.addEventListener("abort", () => {
                const i = this.waiting.indexOf(waiter);
                if (i >= 0) this.waiting.splice(i, 1);
                reject(signal.reason);
            }, {once: true});
        });
    }

    release(item) {
        const next = this.waiting.shift();
        if (next) next.resolve(item);
        else this.free.push(item);
    }
}

class Engine {
    static async load(settings) {
        const llama = await getLlama({gpu: false, build: "never", maxThreads: settings.threads});
        const model = await llama.loadModel({modelPath: settings.model});
        const context = await model.createContext({
            sequences: settings.parallel,
            contextSize: settings.context * settings.parallel,
            threads: settings.threads,
        });
        const chats = Array.from({length: settings.parallel}, () => new LlamaChat({contextSequence: context.getSequence()}));
        return new Engine(settings, llama, model, context, chats);
    }

    constructor(settings, llama, model, context, chats) {
        Object.assign(this, {settings, llama, model, context});
        this.pool = new Pool(chats);
        this.grammars = new Map();
        this.created = Math.floor(Date.now() / 1000);
    }

    async grammar(format) {
        if (format == null) return undefined;
        const key = format.json ? "json" : JSON.stringify(format.schema);
        if (!this.grammars.has(key)) {
            const made = format.json ? this.llama.getGrammarFor("json") : this.llama.createGrammarForJsonSchema(format.schema);
            this.grammars.set(key, made);
            made.catch(() => this.grammars.delete(key));
        }
        try {
            return await this.grammars.get(key);
        } catch (e) {
            throw new RequestError(400, `response_format.json_schema.schema: not supported by the JSON-schema grammar: ${e.message}`,
                {param: "response_format"});
        }
    }

    /** One chat completion, in OpenAI's shape; `signal` aborts it when the client goes away. */
    async complete(body, signal) {
        if (typeof body?.model !== "string" || body.model !== this.settings.name) {
            throw new RequestError(404, `model: ${JSON.stringify(body?.model)} is not served here; ` +
                `this server serves ${JSON.stringify(this.settings.name)}.`, {param: "model", code: "model_not_found"});
        }
        const history = chatHistory(body.messages);
        const options = generationOptions(body, this.settings);
        const grammar = await this.grammar(requestedFormat(body.response_format));
        const chat = await this.pool.acquire(signal);
        try {
            const rendered = chat.chatWrapper.generateContextState({chatHistory: history}).contextText;
            const promptTokens = rendered.tokenize(this.model.tokenizer).length;
            const room = chat.sequence.contextSize - promptTokens;
            if (room < 1) {
                throw new RequestError(400, `messages: the prompt is ${promptTokens} tokens, and this server's context ` +
                    `holds ${chat.sequence.contextSize} per request (raise --context).`, {code: "context_length_exceeded"});
            }
            const result = await chat.generateResponse(history, {
                ...options,
                maxTokens: Math.min(options.maxTokens, room),
                grammar,
                signal,
                // A judge request must be answered whole or refused, never silently shortened.
                contextShift: {strategy: () => { throw new RequestError(400, "messages: the prompt does not fit the context.", {code: "context_length_exceeded"}); }},
            });
            const completionTokens = this.model.tokenize(result.response).length;
            return {
                id: `chatcmpl-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`,
                object: "chat.completion",
                created: Math.floor(Date.now() / 1000),
                model: this.settings.name,
                choices: [{
                    index: 0,
                    message: {role: "assistant", content: result.response},
                    finish_reason: result.metadata.stopReason === "maxTokens" ? "length" : "stop",
                }],
                usage: {prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens},
            };
        } finally {
            this.pool.release(chat);
        }
    }

    models() {
        return {object: "list", data: [{id: this.settings.name, object: "model", created: this.created, owned_by: "local"}]};
    }

    async dispose() {
        await this.context.dispose();
        await this.model.dispose();
        await this.llama.dispose();
    }
}

// ---- I/O: HTTP on 127.0.0.1 ------------------------------------------------------------------------------

function send(res, status, payload) {
    const body = JSON.stringify(payload);
    res.writeHead(status, {"content-type": "application/json", "content-length": Buffer.byteLength(body)});
    res.end(body);
}

function sendError(res, error) {
    const known = error instanceof RequestError;
    const status = known ? error.status : 500;
    send(res, status, {error: {
        message: known ? error.message : `internal error: ${error?.message ?? error}`,
        type: known ? error.type : "server_error",
        param: known ? error.param : null,
        code: known ? error.code : null,
    }});
}

function readBody(req) {
    return new Promise((resolve, reject) => {
        const chunks = [];
        let size = 0;
        req.on("data", (chunk) => {
            size += chunk.length;
            if (size > MAX_BODY_BYTES) {
                reject(new RequestError(413, `the body is over ${MAX_BODY_BYTES} bytes.`));
                req.destroy();
            } else chunks.push(chunk);
        });
        req.on("end", () => {
            try {
                resolve(JSON.parse(Buffer.concat(chunks).toString("utf8")));
            } catch {
                reject(new RequestError(400, "the body is not JSON."));
            }
        });
        req.on("error", reject);
    });
}

function serve(engine) {
    return http.createServer(async (req, res) => {
        const started = Date.now();
        const url = new URL(req.url, "http://127.0.0.1");
        const route = url.pathname.replace(/\/+$/, "");
        const aborted = new AbortController();
        res.on("close", () => { if (!res.writableEnded) aborted.abort(new Error("the client went away")); });
        let note = "";
        try {
            if (req.method === "GET" && (route === "/v1/models" || route === "/models")) {
                send(res, 200, engine.models());
            } else if (req.method === "GET" && route === "/healthz") {
                send(res, 200, {status: "ok"});
            } else if (req.method === "POST" && (route === "/v1/chat/completions" || route === "/chat/completions")) {
                const body = await readBody(req);
                note = body?.response_format?.type ?? "free";
                const answer = await engine.complete(body, aborted.signal);
                note += ` ${answer.usage.prompt_tokens}+${answer.usage.completion_tokens} tokens ${answer.choices[0].finish_reason}`;
                send(res, 200, answer);
            } else {
                throw new RequestError(404, `${req.method} ${url.pathname}: no such route.`, {code: "not_found"});
            }
        } catch (error) {
            if (aborted.signal.aborted) note += " (client went away)";
            else sendError(res, error);
        }
        const status = res.headersSent ? res.statusCode : "-";
        process.stderr.write(`${req.method} ${url.pathname} ${status} ${Date.now() - started} ms ${note}\n`);
    });
}

async function main() {
    let settings;
    try {
        settings = readSettings(process.argv.slice(2), process.env);
    } catch (e) {
        process.stderr.write(`error: ${e.message}\n`);
        process.exit(2);
    }
    if (!fs.existsSync(settings.model)) {
        process.stderr.write(`error: --model (REAL_JUDGE_MODEL): ${settings.model} does not exist. ` +
            "Fetch it with: python3 deploy/real-judge/fetch_model.py\n");
        process.exit(2);
    }
    const loading = Date.now();
    const engine = await Engine.load(settings);
    const server = serve(engine);
    server.listen(settings.port, "127.0.0.1", () => {
        const {port} = server.address();
        process.stdout.write(`real-judge ready: http://127.0.0.1:${port}/v1 serves ${settings.name} ` +
            `(${path.basename(settings.model)}, ${settings.threads} thread(s), ${settings.parallel} at once, ` +
            `loaded in ${Date.now() - loading} ms, pid ${process.pid})\n`);
    });
    let stopping = false;
    const stop = async () => {
        if (stopping) return;
        stopping = true;
        server.close();
        server.closeAllConnections();
        await engine.dispose().catch(() => {});
        process.exit(0);
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
}

main().catch((e) => {
    process.stderr.write(`error: ${e?.message ?? e}\n`);
    process.exit(1);
});
