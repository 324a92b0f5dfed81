"""What the Python suite shares: the gateways tests/openai/run started (one
per mock script, named in TALON_OPENAI_<NAME>_URL/_TOKEN/_DIR), clients of
the official `openai` package pointed at them, the native API for what the
OpenAI surface does not show (tokens, sessions), and raw HTTP for headers
and bodies as they are on the wire."""

import json
import os
import subprocess
import urllib.error
import urllib.request
import uuid

import openai

MODEL = "talon/main"
# The mock scripts' texts and usage (tests/openai/run writes the scripts).
PLAIN_TEXT = "The answer is 42."
PLAIN_USAGE = (120, 6)
TOOL_TEXT = "Listed the workspace."
TOOL_USAGE = (100 + 150, 10 + 5)
CLIENT_TEXT = "It is sunny in Paris."
CLIENT_USAGE = ((80, 8), (90, 7))
SLOW_TEXT = "Slow answer."
SLOW_USAGE = (100 + 150, 10 + 3)

WEATHER_PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CHAT_WEATHER_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "description": "The weather in a city.", "parameters": WEATHER_PARAMETERS},
}
RESPONSES_WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": WEATHER_PARAMETERS,
    "strict": False,
}


class Gateway:
    """One gateway of tests/openai/run."""

    def __init__(self, name):
        upper = name.upper()
        self.name = name
        self.url = os.environ[f"TALON_OPENAI_{upper}_URL"]
        self.token = os.environ[f"TALON_OPENAI_{upper}_TOKEN"]
        self.dir = os.environ[f"TALON_OPENAI_{upper}_DIR"]

    def client(self, token=None, **options):
        # No retries: a retried POST would be a second run, and an error must
        # show as the server sent it.
        return openai.OpenAI(
            base_url=self.url + "/v1", api_key=token or self.token, max_retries=0, timeout=30, **options
        )

    def native(self, method, params, token=None):
        """A call of the native API (`POST /v1/<method>`), decoded."""
        status, _, body = http(self.url, "POST", f"/v1/{method}", token or self.token, params)
        assert status == 200, (method, params, status, body)
        return body

    def token_with(self, *scopes):
        minted = self.native(
            "tokens.create",
            {"name": f"openai-test-{uuid.uuid4().hex[:8]}", "scopes": list(scopes), "expiresInMs": 3_600_000},
        )
        return minted["token"]

    def session_texts(self, key):
        """The user and assistant text messages the session named `key`
        holds, in order: [(role, text)] (tool traffic left out)."""
        session = self.native("sessions.resolve", {"key": key})
        page = self.native("sessions.messages", {"sessionId": session["id"]})
        assert page["hasMore"] is False, page
        return [
            (m["role"], m["text"]) for m in page["messages"] if m["role"] in ("user", "assistant") and m.get("text")
        ]

    def restart(self):
        """SIGKILL this gateway and start it again on the same state (the
        restart gateway only): the new URL."""
        done = subprocess.run(
            [os.environ["TALON_OPENAI_GATEWAY"], "restart", self.dir], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        self.url = done.stdout.strip().splitlines()[-1]
        return self.url


def http(url, method, path, token, body=None):
    """A raw request: (status, headers as a lower-cased dict, decoded JSON body or text)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, headers, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        status, headers, raw = error.code, error.headers, error.read()
    text = raw.decode()
    try:
        decoded = json.loads(text)
    except ValueError:
        decoded = text
    return status, {k.lower(): v for k, v in headers.items()}, decoded


def sse_lines(gateway, path, body):
    """A streamed POST's lines as they come, blank ones left out."""
    request = urllib.request.Request(gateway.url + path, data=json.dumps(body).encode(), method="POST")
    request.add_header("Authorization", f"Bearer {gateway.token}")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return [line.decode().rstrip("\r\n") for line in response if line.strip()]


def usage_of(prompt_completion):
    prompt, completion = prompt_completion
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def responses_usage(prompt_completion):
    prompt, completion = prompt_completion
    return {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion}


def assert_openai_error(test, error, status, code):
    """An APIStatusError with OpenAI's envelope: status, code and the
    envelope's four keys (the Python client keeps `error`'s inside as body)."""
    test.assertEqual(error.status_code, status, error.body)
    test.assertEqual(error.code, code, error.body)
    test.assertIsInstance(error.body, dict, error.body)
    test.assertLessEqual({"message", "type", "param", "code"}, set(error.body), error.body)
    test.assertIsInstance(error.body["message"], str, error.body)
    test.assertEqual(error.response.headers.get("x-should-retry"), "false", dict(error.response.headers))
