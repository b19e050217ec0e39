#!/usr/bin/env python3
"""mock_api.py - a mock of the model APIs that agent CLIs call, for taskq's tests.

One threaded HTTP server on 127.0.0.1 (never another address) that answers
  - the Anthropic Messages API (Claude Code, OpenCode):  HEAD /,
    POST /v1/messages[?beta=true], streaming (SSE) and plain JSON;
  - the Gemini API (Gemini CLI): POST /v1beta/models/M:streamGenerateContent,
    :generateContent, :countTokens;
  - the OpenAI Responses API (Codex): POST /v1/responses (SSE or JSON);
  - a control API: GET/POST /_control/mode, /_control/text,
    /_control/tool_command; GET /_control/requests (the count).
The answers follow the measurements in shared/research/agent-clis.md, sections
2, 4 and 5: the event order, the JSON shapes, the error bodies.

What it answers is the *mode*: one mode, or a comma-separated sequence used
one per model request (HEAD / and countTokens do not count), the last one
repeating: `429,429,ok` answers two rate limits, then success for ever.
The mode is set by --mode, changed at run time by POST /_control/mode (the
body is the mode) or by writing the file CONTROL_DIR/mode (re-read before
every request when its content changed). Setting a mode, by either way,
restarts its sequence. The reply text and the tool command work the same way
(files CONTROL_DIR/text and CONTROL_DIR/tool_command).

Every request is logged as one JSON line to --log before it is answered (so
a request that is then held or dropped is logged too): its number, time,
method, path, query, the headers the CLIs send, the JSON body, the API and the
mode that answered. The log is what tests read: the request count, the model,
whether a resumed session's request carries the earlier turn.

It prints "PORT\n" on stdout when it listens (and writes it to --port-file,
via a rename, so a reader never sees half a number), exits 0 on SIGTERM or
SIGINT, and, with --parent-pid, exits by itself when that process is gone, so
it cannot outlive a test that forgot it. Standard library only.
"""

import argparse
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODES_HELP = """\
modes (one per model request; a comma-separated list is a sequence):
  ok            success: text (or the tool_result follow-up) in the API's format
  tool          ask for a shell tool call running the tool command
                (--tool-command) unless the last message already carries a
                tool result; then answer --tool-text. Anthropic: Bash (Claude
                Code) or bash (OpenCode), whichever the request offers;
                OpenAI: exec_command (Codex 0.169) or shell; Gemini:
                run_shell_command
  echo          success, the text being "You said: <last user text>"
  slow[:S]      wait S seconds (default --delay), then answer as ok
  hang          hold the connection open without answering (until stop)
  drop          read the request, then reset the connection (TCP RST)
  eof           read the request, then close the connection (FIN), no reply
  429[:S]       rate limit, retry-after: S (default --retry-after)
  529           overloaded (Anthropic 529; Gemini and OpenAI answer 503)
  500 502 503   server errors
  400 401 403 404 413   client errors, each with its API's error type
  credit        400 "Your credit balance is too low ..." (Anthropic)
  sse_overloaded   200 text/event-stream carrying an in-stream error event
  sse_cut       200 text/event-stream cut after the first text delta
"""

# Anthropic error type and message per status (research section 2).
ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "bad request from mock"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error",
          "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "model: not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error",
          "Number of request tokens has exceeded your per-minute rate limit"),
    500: ("api_error", "Internal server error"),
    502: ("api_error", "Bad gateway"),
    503: ("api_error", "Service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}
CREDIT_MESSAGE = ("Your credit balance is too low to access the Anthropic API. "
                  "Please go to Plans & Billing to upgrade or purchase credits.")

# Gemini (google.rpc) status names and messages per HTTP status (section 4).
GEMINI_ERRORS = {
    400: ("INVALID_ARGUMENT", "Request contains an invalid argument."),
    401: ("UNAUTHENTICATED", "API key not valid. Please pass a valid API key."),
    403: ("PERMISSION_DENIED", "The caller does not have permission"),
    404: ("NOT_FOUND", "models/mock is not found"),
    413: ("INVALID_ARGUMENT", "Request payload size exceeds the limit"),
    429: ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
    500: ("INTERNAL", "An internal error has occurred."),
    502: ("UNAVAILABLE", "Bad gateway"),
    503: ("UNAVAILABLE", "The model is overloaded. Please try again later."),
}

# OpenAI error type, code and message per HTTP status.
OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "bad request from mock"),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("permission_error", None, "You are not allowed to access this resource."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist."),
    413: ("invalid_request_error", None, "Request too large."),
    429: ("requests", "rate_limit_exceeded",
          "Rate limit reached for requests. Please try again in 1s."),
    500: ("server_error", None, "The server had an error while processing your request."),
    502: ("server_error", None, "Bad gateway"),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}

INPUT_TOKENS = 12
OUTPUT_TOKENS = 6

# Headers worth logging: what the CLIs send that a test may check.
LOGGED_HEADERS = (
    "x-api-key", "authorization", "x-goog-api-key", "anthropic-version",
    "anthropic-beta", "user-agent", "x-stainless-retry-count",
    "x-stainless-timeout", "content-type", "accept",
)


class State:
    """The mode, reply text and tool command, the sequence position, the
    request counter and the log; shared by the handler threads."""

    def __init__(self, args):
        self.lock = threading.Lock()
        self.args = args
        self.values = {"mode": args.mode, "text": args.text,
                       "tool_command": args.tool_command}
        self.file_seen = {}
        self.seq_pos = 0
        self.count = 0       # every logged request
        self.model_count = 0  # model requests (those that use a mode)
        self.log = open(args.log, "a", encoding="utf-8") if args.log else None
        self.stopping = threading.Event()

    def set(self, name, value):
        with self.lock:
            self._set(name, value)

    def _set(self, name, value):
        self.values[name] = value
        if name == "mode":
            self.seq_pos = 0

    def _reload_files(self):
        if not self.args.control_dir:
            return
        for name in self.values:
            path = os.path.join(self.args.control_dir, name)
            try:
                with open(path, encoding="utf-8") as f:
                    data = f.read()
            except OSError:
                continue
            if self.file_seen.get(name) != data:
                self.file_seen[name] = data
                value = data.strip() if name == "mode" else data.rstrip("\n")
                self._set(name, value)

    def next_request(self, uses_mode):
        """Number the request; for a model request, the mode that answers it
        (the sequence advances). Returns (number, mode, text, tool_command)."""
        with self.lock:
            self._reload_files()
            self.count += 1
            mode = None
            if uses_mode:
                self.model_count += 1
                seq = [m.strip() for m in self.values["mode"].split(",") if m.strip()] or ["ok"]
                mode = seq[min(self.seq_pos, len(seq) - 1)]
                self.seq_pos += 1
            return self.count, mode, self.values["text"], self.values["tool_command"]

    def write_log(self, entry):
        if not self.log:
            return
        line = json.dumps(entry, separators=(",", ":")) + "\n"
        with self.lock:
            self.log.write(line)
            self.log.flush()


def json_of_schema(schema):
    """The smallest value a JSON schema (OpenAPI or JSON Schema spelling, so
    "INTEGER" or "integer") accepts: every property of an object (required
    or not), one item of an array, the first enum value, a number's minimum
    (else 1), "mock" for a string."""
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {k: json_of_schema(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return [json_of_schema(schema.get("items") or {})]
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "mock"


def sse(event, data):
    return ("event: %s\ndata: %s\n\n" % (event, json.dumps(data, separators=(",", ":")))).encode()


def parse_mode(mode, default_arg):
    """'429:5' -> ('429', '5'); 'ok' -> ('ok', default_arg)."""
    name, _, arg = mode.partition(":")
    return name, (arg if arg else default_arg)


def last_user_text(messages):
    """The text of the last user message (Anthropic or OpenAI shapes)."""
    for m in reversed(messages or []):
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, str):
            return c
        if isinstance(c, list):
            texts = [b.get("text", "") for b in c
                     if isinstance(b, dict) and b.get("type") in ("text", "input_text")]
            if texts:
                return texts[-1]
    return ""


def has_tool_result(messages):
    """The last message carries a tool result (Anthropic tool_result block or
    OpenAI function_call_output item)."""
    if not messages:
        return False
    m = messages[-1]
    if not isinstance(m, dict):
        return False
    if m.get("type") == "function_call_output":
        return True
    c = m.get("content")
    return isinstance(c, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in c)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "taskq-mock/1"
    sys_version = ""

    def log_message(self, fmt, *args):  # quiet: the JSON log is the record
        pass

    # -- plumbing -----------------------------------------------------------

    @property
    def state(self):
        return self.server.state

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n > 0 else b""
        try:
            return raw, (json.loads(raw) if raw else None)
        except ValueError:
            return raw, None

    def send_json(self, status, obj, headers=()):
        body = json.dumps(obj, separators=(",", ":")).encode()
        # http.server knows no phrase for 529; the API says "Overloaded"
        self.send_response(status, "Overloaded" if status == 529 else None)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def send_text(self, status, text):
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.close_connection = True

    def start_sse(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def write(self, data):
        self.wfile.write(data)
        self.wfile.flush()

    def drop(self, reset):
        """Close without a reply: RST (SO_LINGER 0, then close at once) or a
        plain FIN (shutdown)."""
        sock = self.connection
        if reset:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            # the fd closes only when the makefile() objects are closed too
            self.rfile.close()
            self.wfile.close()
            sock.close()
        else:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.close_connection = True
        # finish() flushes and closes these: give it harmless ones
        self.rfile = open(os.devnull, "rb")
        self.wfile = open(os.devnull, "wb")

    def hold(self):
        """Hang: answer nothing until the server stops."""
        self.state.stopping.wait()
        self.close_connection = True

    def record(self, api, body, uses_mode):
        n, mode, text, tool_cmd = self.state.next_request(uses_mode)
        url = urllib.parse.urlsplit(self.path)
        headers = {k: self.headers[k] for k in LOGGED_HEADERS if self.headers.get(k) is not None}
        self.state.write_log({
            "n": n, "time": round(time.time(), 3), "method": self.command,
            "path": url.path, "query": url.query, "api": api, "mode": mode,
            "headers": headers, "body": body,
        })
        return mode, text, tool_cmd

    def common_mode(self, mode, status_of):
        """Handle the modes that are the same for every API. Returns True when
        the request has been answered (or dropped, or held)."""
        name, arg = parse_mode(mode, None)
        if name == "hang":
            self.hold()
            return True
        if name in ("drop", "eof"):
            self.drop(reset=(name == "drop"))
            return True
        if name == "slow":
            delay = float(arg) if arg else self.state.args.delay
            if self.state.stopping.wait(delay):
                self.close_connection = True
                return True
        return False

    # -- dispatch -----------------------------------------------------------

    def do_HEAD(self):
        self.record("head", None, False)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        if url.path.startswith("/_control/"):
            return self.control_get(url.path[len("/_control/"):])
        self.record("get", None, False)
        if url.path in ("/", "/v1/models"):
            return self.send_json(200, {"object": "list", "data": []})
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                        "message": "no route " + url.path}})

    def do_POST(self):
        url = urllib.parse.urlsplit(self.path)
        raw, body = self.read_body()
        if url.path.startswith("/_control/"):
            return self.control_post(url.path[len("/_control/"):], raw)
        if url.path == "/v1/messages":
            mode, text, cmd = self.record("anthropic", body, True)
            return self.anthropic(mode, body or {}, text, cmd)
        if url.path.startswith("/v1beta/models/") and ":" in url.path:
            action = url.path.rsplit(":", 1)[1]
            model = url.path[len("/v1beta/models/"):].rsplit(":", 1)[0]
            counts = action != "countTokens"
            mode, text, cmd = self.record("gemini", body, counts)
            return self.gemini(action, model, mode, body or {}, text, cmd)
        if url.path in ("/v1/responses", "/responses"):
            mode, text, cmd = self.record("openai", body, True)
            return self.openai(mode, body or {}, text, cmd)
        self.record("unknown", body, False)
        self.send_json(404, {"type": "error", "error": {"type": "not_found_error",
                                                        "message": "no route " + url.path}})

    # -- control ------------------------------------------------------------

    def control_get(self, name):
        if name == "requests":
            with self.state.lock:
                return self.send_text(200, "%d\n" % self.state.model_count)
        if name in self.state.values:
            with self.state.lock:
                return self.send_text(200, self.state.values[name] + "\n")
        self.send_text(404, "unknown control " + name + "\n")

    def control_post(self, name, raw):
        if name not in self.state.values:
            return self.send_text(404, "unknown control " + name + "\n")
        value = raw.decode("utf-8", "replace")
        self.state.set(name, value.strip() if name == "mode" else value.rstrip("\n"))
        self.send_text(200, "ok\n")

    # -- Anthropic Messages -------------------------------------------------

    def anthropic(self, mode, body, text, tool_cmd):
        if self.common_mode(mode, None):
            return
        name, arg = parse_mode(mode, None)
        model = body.get("model") or "claude-mock"
        stream = body.get("stream") is True
        messages = body.get("messages") or []
        if name == "credit":
            return self.anthropic_error(400, "invalid_request_error", CREDIT_MESSAGE)
        if name.isdigit():
            status = int(name)
            etype, msg = ANTHROPIC_ERRORS.get(status, ("api_error", "mock error %d" % status))
            headers = []
            if status == 429:
                headers.append(("retry-after", arg or str(self.state.args.retry_after)))
            return self.anthropic_error(status, etype, msg, headers)
        if name == "echo":
            text = "You said: " + last_user_text(messages)
        tool = None
        # Claude Code's tool is "Bash"; OpenCode's (through @ai-sdk/anthropic) "bash"
        tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
        tool_name = "bash" if "bash" in tools and "Bash" not in tools else "Bash"
        if name == "tool" and not has_tool_result(messages):
            tool = {"command": tool_cmd, "description": "Run the test's command"}
        elif name == "tool":
            text = self.state.args.tool_text
        n = self.state.count
        if not stream:
            if name in ("sse_overloaded", "sse_cut"):
                name = "ok"  # the non-streaming fallback succeeds
            content = ([{"type": "tool_use", "id": "toolu_mock_%d" % n, "name": tool_name,
                         "input": tool}] if tool else [{"type": "text", "text": text}])
            return self.send_json(200, {
                "id": "msg_mock_%d" % n, "type": "message", "role": "assistant",
                "model": model, "content": content,
                "stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}})
        self.start_sse()
        self.write(sse("message_start", {"type": "message_start", "message": {
            "id": "msg_mock_%d" % n, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": INPUT_TOKENS, "output_tokens": 1,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}))
        if name == "sse_overloaded":
            self.write(sse("error", {"type": "error", "error": {
                "type": "overloaded_error", "message": "Overloaded"}}))
            return
        if tool:
            block = {"type": "tool_use", "id": "toolu_mock_%d" % n, "name": tool_name, "input": {}}
            deltas = [{"type": "input_json_delta",
                       "partial_json": json.dumps(tool, separators=(",", ":"))}]
        else:
            block = {"type": "text", "text": ""}
            half = max(1, len(text) // 2)
            deltas = [{"type": "text_delta", "text": t} for t in (text[:half], text[half:]) if t]
        self.write(sse("content_block_start", {"type": "content_block_start", "index": 0,
                                               "content_block": block}))
        self.write(sse("ping", {"type": "ping"}))
        for i, d in enumerate(deltas):
            self.write(sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                   "delta": d}))
            if name == "sse_cut":
                self.drop(reset=False)
                return
        self.write(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        self.write(sse("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": OUTPUT_TOKENS}}))
        self.write(sse("message_stop", {"type": "message_stop"}))

    def anthropic_error(self, status, etype, msg, headers=()):
        self.send_json(status, {"type": "error", "error": {"type": etype, "message": msg}},
                       list(headers) + [("request-id", "req_mock_%d" % self.state.count)])

    # -- Gemini -------------------------------------------------------------

    def gemini(self, action, model, mode, body, text, tool_cmd=""):
        if action == "countTokens":
            return self.send_json(200, {"totalTokens": INPUT_TOKENS})
        if self.common_mode(mode, None):
            return
        name, arg = parse_mode(mode, None)
        if name == "credit":
            name = "429"
        if name == "529":
            name = "503"
        if name.isdigit():
            status = int(name)
            st, msg = GEMINI_ERRORS.get(status, ("UNKNOWN", "mock error %d" % status))
            headers = [("retry-after", arg or str(self.state.args.retry_after))] if status == 429 else []
            return self.send_json(status, {"error": {"code": status, "message": msg, "status": st}},
                                  headers)
        if name == "echo":
            contents = body.get("contents") or []
            parts = contents[-1].get("parts", []) if contents and isinstance(contents[-1], dict) else []
            text = "You said: " + "".join(p.get("text", "") for p in parts if isinstance(p, dict))
        contents = body.get("contents") or []
        last = contents[-1] if contents and isinstance(contents[-1], dict) else {}
        answered = any(isinstance(p, dict) and "functionResponse" in p
                       for p in last.get("parts") or [])
        part = {"text": text}
        gen = body.get("generationConfig") if isinstance(body.get("generationConfig"), dict) else {}
        if gen.get("responseMimeType") == "application/json":
            # A structured-output request (Gemini CLI's generateJson: the
            # model router's complexity classifier before every turn on a
            # Gemini 3 model): the real API answers JSON of the schema, so
            # does the mock. Plain text made the CLI retry it 5 times with
            # backoff, ~100 s, before falling back to the default model.
            part = {"text": json.dumps(json_of_schema(
                gen.get("responseJsonSchema") or gen.get("responseSchema") or {}))}
        elif name == "tool" and not answered:
            # Gemini CLI's shell tool
            part = {"functionCall": {"name": "run_shell_command",
                                     "args": {"command": tool_cmd,
                                              "description": "Run the test's command"}}}
        elif name == "tool":
            part = {"text": self.state.args.tool_text}
        chunk = {"candidates": [{"content": {"parts": [part], "role": "model"},
                                 "finishReason": "STOP", "index": 0}],
                 "usageMetadata": {"promptTokenCount": INPUT_TOKENS,
                                   "candidatesTokenCount": OUTPUT_TOKENS,
                                   "totalTokenCount": INPUT_TOKENS + OUTPUT_TOKENS},
                 "modelVersion": model}
        if action != "streamGenerateContent":
            return self.send_json(200, chunk)
        self.start_sse()
        if name == "sse_cut":
            self.write(b"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel")
            self.drop(reset=False)
            return
        if name == "sse_overloaded":
            self.write(("data: %s\r\n\r\n" % json.dumps({"error": {
                "code": 503, "message": GEMINI_ERRORS[503][1], "status": "UNAVAILABLE"}})).encode())
            return
        self.write(("data: %s\r\n\r\n" % json.dumps(chunk, separators=(",", ":"))).encode())

    # -- OpenAI Responses ---------------------------------------------------

    def openai(self, mode, body, text, tool_cmd):
        if self.common_mode(mode, None):
            return
        name, arg = parse_mode(mode, None)
        if name == "credit":
            name = "429"
        if name == "529":
            name = "503"
        if name.isdigit():
            status = int(name)
            etype, code, msg = OPENAI_ERRORS.get(status, ("server_error", None,
                                                          "mock error %d" % status))
            headers = [("retry-after", arg or str(self.state.args.retry_after))] if status == 429 else []
            return self.send_json(status, {"error": {"message": msg, "type": etype,
                                                     "param": None, "code": code}}, headers)
        items = body.get("input") if isinstance(body.get("input"), list) else []
        if name == "echo":
            text = "You said: " + last_user_text(items)
        n = self.state.count
        rid = "resp_mock_%d" % n
        model = body.get("model") or "gpt-mock"
        if name == "tool" and not has_tool_result(items):
            # codex 0.169 offers exec_command {"cmd": "..."}; older ones shell
            tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
            if "exec_command" in tools:
                fname, fargs = "exec_command", {"cmd": tool_cmd, "login": False}
            else:
                fname, fargs = "shell", {"command": ["bash", "-lc", tool_cmd]}
            item = {"type": "function_call", "id": "fc_mock_%d" % n, "call_id": "call_mock_%d" % n,
                    "name": fname, "status": "completed", "arguments": json.dumps(fargs)}
        else:
            if name == "tool":
                text = self.state.args.tool_text
            item = {"type": "message", "id": "msg_mock_%d" % n, "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}
        usage = {"input_tokens": INPUT_TOKENS, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": OUTPUT_TOKENS,
                 "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS}
        response = {"id": rid, "object": "response", "created_at": int(time.time()),
                    "status": "completed", "model": model, "output": [item], "usage": usage}
        if body.get("stream") is not True:
            return self.send_json(200, response)
        self.start_sse()
        seq = [0]

        def ev(etype, **fields):
            data = {"type": etype, "sequence_number": seq[0]}
            data.update(fields)
            seq[0] += 1
            self.write(sse(etype, data))

        pending = dict(response, status="in_progress", output=[], usage=None)
        ev("response.created", response=pending)
        ev("response.in_progress", response=pending)
        if name == "sse_overloaded":
            ev("response.failed", response=dict(pending, status="failed", error={
                "code": "server_error", "message": OPENAI_ERRORS[503][2]}))
            return
        if item["type"] == "message":
            empty = dict(item, status="in_progress", content=[])
            ev("response.output_item.added", output_index=0, item=empty)
            part = {"type": "output_text", "text": "", "annotations": []}
            ev("response.content_part.added", item_id=item["id"], output_index=0,
               content_index=0, part=part)
            ev("response.output_text.delta", item_id=item["id"], output_index=0,
               content_index=0, delta=text)
            if name == "sse_cut":
                self.drop(reset=False)
                return
            ev("response.output_text.done", item_id=item["id"], output_index=0,
               content_index=0, text=text)
            ev("response.content_part.done", item_id=item["id"], output_index=0,
               content_index=0, part=dict(part, text=text))
        else:
            ev("response.output_item.added", output_index=0, item=dict(item, arguments=""))
        ev("response.output_item.done", output_index=0, item=item)
        ev("response.completed", response=response)


class Server(ThreadingHTTPServer):
    daemon_threads = True       # a held (hang) request never blocks exit
    allow_reuse_address = True
    request_queue_size = 64


def watch_parent(pid, state, server):
    """Stop when the test that started us is gone (its pid no longer exists)."""
    while not state.stopping.wait(0.5):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            state.stopping.set()
            server.shutdown()
            return
        except PermissionError:
            pass


def main():
    ap = argparse.ArgumentParser(
        prog="mock_api.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Mock Anthropic / Gemini / OpenAI Responses API on 127.0.0.1 for "
                    "taskq's agent tests.", epilog=MODES_HELP)
    ap.add_argument("--port", type=int, default=0, help="port to bind (default 0: any free one)")
    ap.add_argument("--port-file", help="write the bound port here (atomically) once listening")
    ap.add_argument("--mode", default="ok", help="initial mode or sequence (default ok)")
    ap.add_argument("--control-dir", help="directory whose files mode, text, tool_command "
                    "override the settings when their content changes")
    ap.add_argument("--log", help="append one JSON line per request to this file")
    ap.add_argument("--text", default="Hello from the mock.", help="the reply text")
    ap.add_argument("--tool-command", default="echo tool-ran",
                    help="the Bash command of a tool mode's tool call")
    ap.add_argument("--tool-text", default="Tool done.",
                    help="the reply text after a tool result (tool mode)")
    ap.add_argument("--retry-after", default="1", help="retry-after header of 429 (seconds)")
    ap.add_argument("--delay", type=float, default=5.0, help="seconds a slow answer waits")
    ap.add_argument("--parent-pid", type=int, help="exit when this pid is gone")
    args = ap.parse_args()

    state = State(args)
    server = Server(("127.0.0.1", args.port), Handler)
    server.state = state
    port = server.server_address[1]

    def stop(signum, frame):
        state.stopping.set()
        # shutdown() waits for serve_forever to return: not from this thread
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.parent_pid:
        threading.Thread(target=watch_parent, args=(args.parent_pid, state, server),
                         daemon=True).start()
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, args.port_file)
    sys.stdout.write("%d\n" % port)
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        state.stopping.set()
        server.server_close()
        if state.log:
            state.log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
