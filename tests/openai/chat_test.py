"""/v1/models and /v1/chat/completions through the official Python client
(openai 3.51.0): models per token, plain and streamed completions, usage,
tool progress of server-side tools, a client tool's round trip, sessions
and OpenAI's error envelope."""

import json
import unittest
import uuid

import openai

from common import (
    CHAT_WEATHER_TOOL,
    CLIENT_TEXT,
    CLIENT_USAGE,
    MODEL,
    PLAIN_TEXT,
    PLAIN_USAGE,
    SLOW_TEXT,
    TOOL_TEXT,
    TOOL_USAGE,
    Gateway,
    assert_openai_error,
    http,
    sse_lines,
    usage_of,
)

HI = [{"role": "user", "content": "hi"}]


def extra(model, key):
    """An extension field the client keeps as an extra attribute."""
    return (model.model_extra or {}).get(key)


class ModelsTest(unittest.TestCase):
    def setUp(self):
        self.gateway = Gateway("plain")

    def entry(self, model_id, created):
        return {"id": model_id, "object": "model", "created": created, "owned_by": "talon"}

    def test_models_lists_each_agent_the_token_may_run(self):
        page = self.gateway.client().models.list()
        data = sorted((m.to_dict() for m in page.data), key=lambda m: m["id"])
        for model in data:
            # Seconds, as OpenAI's `created` (not milliseconds).
            self.assertIsInstance(model.get("created"), int, data)
            self.assertTrue(1_700_000_000 <= model["created"] < 10_000_000_000, data)
        self.assertEqual(
            data,
            [self.entry("talon/main", data[0]["created"]), self.entry("talon/reviewer", data[1]["created"])],
        )
        self.assertEqual(page.object, "list")

    def test_models_retrieve(self):
        model = self.gateway.client().models.retrieve(MODEL).to_dict()
        self.assertEqual(model, self.entry(MODEL, model["created"]))
        with self.assertRaises(openai.NotFoundError) as caught:
            self.gateway.client().models.retrieve("talon/nobody")
        assert_openai_error(self, caught.exception, 404, "model_not_found")

    def test_a_token_that_may_not_run_agents_lists_none(self):
        token = self.gateway.token_with("agent.read")
        self.assertEqual(self.gateway.client(token).models.list().data, [])

    def test_a_token_that_may_not_run_agents_may_not_create(self):
        client = self.gateway.client(self.gateway.token_with("agent.read", "session.read", "session.write"))
        with self.assertRaises(openai.PermissionDeniedError) as caught:
            client.chat.completions.create(model=MODEL, messages=HI)
        assert_openai_error(self, caught.exception, 403, "insufficient_scope")
        with self.assertRaises(openai.PermissionDeniedError) as caught:
            client.responses.create(model=MODEL, input="hi")
        assert_openai_error(self, caught.exception, 403, "insufficient_scope")

    def test_a_bad_token_is_refused(self):
        client = self.gateway.client("talon_" + "0" * 64)
        with self.assertRaises(openai.AuthenticationError) as caught:
            client.models.list()
        self.assertEqual(caught.exception.status_code, 401)
        with self.assertRaises(openai.AuthenticationError):
            client.chat.completions.create(model=MODEL, messages=HI)


class ChatTest(unittest.TestCase):
    def setUp(self):
        self.plain = Gateway("plain")
        self.tool = Gateway("tool")
        self.client = self.plain.client()

    def test_a_completion(self):
        raw = self.client.chat.completions.with_raw_response.create(model=MODEL, messages=HI)
        self.assertTrue(raw.headers.get("x-talon-run-id", "").startswith("run_"), dict(raw.headers))
        self.assertTrue(raw.headers.get("x-talon-session-key"), dict(raw.headers))
        completion = raw.parse()
        self.assertEqual(completion.object, "chat.completion")
        self.assertEqual(completion.model, MODEL)
        self.assertEqual(len(completion.choices), 1, completion)
        choice = completion.choices[0]
        self.assertEqual(
            (choice.index, choice.finish_reason, choice.message.role, choice.message.content),
            (0, "stop", "assistant", PLAIN_TEXT),
        )
        self.assertFalse(choice.message.tool_calls, choice.message)
        self.assertEqual(completion.usage.to_dict(), usage_of(PLAIN_USAGE))

    def test_an_unknown_model_is_not_found(self):
        with self.assertRaises(openai.NotFoundError) as caught:
            self.client.chat.completions.create(model="talon/nobody", messages=HI)
        assert_openai_error(self, caught.exception, 404, "model_not_found")

    def test_the_error_envelope_on_the_wire(self):
        status, headers, body = http(
            self.plain.url, "POST", "/v1/chat/completions", self.plain.token, {"model": "talon/nobody", "messages": HI}
        )
        self.assertEqual(status, 404, body)
        self.assertEqual(headers.get("x-should-retry"), "false", headers)
        self.assertEqual(list(body), ["error"], body)
        self.assertLessEqual({"message", "type", "param", "code"}, set(body["error"]), body)
        self.assertEqual((body["error"]["type"], body["error"]["code"]), ("invalid_request_error", "model_not_found"))

    def stream_chunks(self, client, **params):
        stream = client.chat.completions.create(model=MODEL, messages=HI, stream=True, **params)
        chunks = list(stream)  # ends cleanly at [DONE]
        self.assertTrue(chunks)
        self.assertEqual({c.id for c in chunks}, {chunks[0].id}, "one id on every chunk")
        self.assertEqual({c.object for c in chunks}, {"chat.completion.chunk"})
        self.assertEqual({c.model for c in chunks}, {MODEL})
        return chunks

    def test_a_streamed_completion_says_what_the_plain_one_says(self):
        plain = self.client.chat.completions.create(model=MODEL, messages=HI)
        chunks = self.stream_chunks(self.client)
        choices = [c.choices[0] for c in chunks]
        self.assertEqual(choices[0].delta.role, "assistant")
        self.assertEqual("".join(c.delta.content or "" for c in choices), plain.choices[0].message.content)
        self.assertEqual([c.finish_reason for c in choices if c.finish_reason], ["stop"])
        self.assertEqual(choices[-1].finish_reason, "stop")
        self.assertEqual([c.usage for c in chunks], [None] * len(chunks))

    def test_include_usage_adds_a_last_chunk_with_usage_only(self):
        chunks = self.stream_chunks(self.client, stream_options={"include_usage": True})
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(chunks[-1].usage.to_dict(), usage_of(PLAIN_USAGE))
        self.assertEqual([c.usage for c in chunks[:-1]], [None] * (len(chunks) - 1))
        self.assertEqual("".join(c.choices[0].delta.content or "" for c in chunks[:-1]), PLAIN_TEXT)

    def test_the_stream_helper(self):
        with self.client.chat.completions.stream(model=MODEL, messages=HI) as stream:
            kinds = [event.type for event in stream]
            final = stream.get_final_completion()
        self.assertIn("content.done", kinds)
        self.assertEqual((final.choices[0].message.content, final.choices[0].finish_reason), (PLAIN_TEXT, "stop"))

    def test_tool_progress_in_a_stream(self):
        chunks = self.stream_chunks(self.tool.client(), stream_options={"include_usage": True})
        deltas = [c.choices[0].delta for c in chunks if c.choices]
        progress = "".join(extra(d, "reasoning_content") or "" for d in deltas).splitlines()
        self.assertEqual(len(progress), 2, progress)
        self.assertTrue(progress[0].startswith("→ list"), progress)
        self.assertTrue(progress[1].startswith("✓ list"), progress)
        talon = [extra(c, "talon") for c in chunks if extra(c, "talon") is not None]
        self.assertEqual(
            [(t["type"], t["name"]) for t in talon], [("tool.call.started", "list"), ("tool.call.completed", "list")]
        )
        self.assertTrue(talon[0]["callId"] and talon[0]["callId"] == talon[1]["callId"], talon)
        # The server ran the tool: no client sees it as a call to make.
        self.assertEqual([d.tool_calls for d in deltas if d.tool_calls], [])
        self.assertEqual("".join(d.content or "" for d in deltas), TOOL_TEXT)
        self.assertEqual(
            [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason], ["stop"]
        )
        self.assertEqual(chunks[-1].usage.to_dict(), usage_of(TOOL_USAGE))

    def test_heartbeats_in_a_slow_stream(self):
        # On the wire: comment lines while the model takes 1.5 s, and no
        # `id:` lines (the Python client turns an id-only frame into an
        # empty event it cannot decode).
        slow = Gateway("slow")
        lines = sse_lines(slow, "/v1/chat/completions", {"model": MODEL, "messages": HI, "stream": True})
        self.assertTrue([line for line in lines if line.startswith(":")], lines)
        self.assertEqual([line for line in lines if line.startswith("id:")], [])
        self.assertEqual(lines[-1], "data: [DONE]", lines[-5:])
        # Through the client: the heartbeats are invisible.
        chunks = self.stream_chunks(slow.client())
        self.assertEqual("".join(c.choices[0].delta.content or "" for c in chunks if c.choices), SLOW_TEXT)

    def test_tool_progress_in_a_completion(self):
        completion = self.tool.client().chat.completions.create(model=MODEL, messages=HI)
        message = completion.choices[0].message
        self.assertEqual((message.content, completion.choices[0].finish_reason), (TOOL_TEXT, "stop"))
        self.assertFalse(message.tool_calls, message)
        progress = (extra(message, "reasoning_content") or "").splitlines()
        self.assertEqual([line.split(" ")[:2] for line in progress], [["→", "list"], ["✓", "list"]], progress)
        self.assertEqual(completion.usage.to_dict(), usage_of(TOOL_USAGE))


class ClientToolTest(unittest.TestCase):
    def setUp(self):
        self.gateway = Gateway("client")
        self.client = self.gateway.client()

    def round_trip(self, first_message, first_finish, session_key):
        self.assertEqual(first_finish, "tool_calls")
        self.assertFalse(first_message.content, first_message)
        calls = first_message.tool_calls
        self.assertEqual(len(calls), 1, calls)
        self.assertTrue(calls[0].id, calls)
        self.assertEqual((calls[0].type, calls[0].function.name), ("function", "get_weather"))
        self.assertEqual(json.loads(calls[0].function.arguments), {"city": "Paris"})
        history = [
            {"role": "user", "content": "What is the weather in Paris?"},
            first_message.to_dict(exclude_none=True),
            {"role": "tool", "tool_call_id": calls[0].id, "content": "sunny"},
        ]
        raw = self.client.chat.completions.with_raw_response.create(
            model=MODEL,
            messages=history,
            tools=[CHAT_WEATHER_TOOL],
            extra_headers={"x-talon-session-key": session_key},
        )
        self.assertEqual(raw.headers.get("x-talon-session-key"), session_key)
        final = raw.parse()
        self.assertEqual((final.choices[0].message.content, final.choices[0].finish_reason), (CLIENT_TEXT, "stop"))
        self.assertFalse(final.choices[0].message.tool_calls)
        self.assertEqual(final.usage.to_dict(), usage_of(CLIENT_USAGE[1]))
        # The answer reached the model as the tool's result, once.
        session = self.gateway.native("sessions.resolve", {"key": session_key})
        messages = self.gateway.native("sessions.messages", {"sessionId": session["id"]})["messages"]
        tools = [(m.get("toolCallId"), m.get("text")) for m in messages if m["role"] == "tool"]
        self.assertEqual(tools, [(calls[0].id, "sunny")], messages)

    def test_a_client_tool_round_trip(self):
        raw = self.client.chat.completions.with_raw_response.create(
            model=MODEL,
            messages=[{"role": "user", "content": "What is the weather in Paris?"}],
            tools=[CHAT_WEATHER_TOOL],
        )
        first = raw.parse()
        self.assertEqual(first.usage.to_dict(), usage_of(CLIENT_USAGE[0]))
        self.round_trip(first.choices[0].message, first.choices[0].finish_reason, raw.headers["x-talon-session-key"])

    def test_a_client_tool_round_trip_streamed(self):
        key = f"py-weather-{uuid.uuid4().hex}"
        with self.client.chat.completions.stream(
            model=MODEL,
            messages=[{"role": "user", "content": "What is the weather in Paris?"}],
            tools=[CHAT_WEATHER_TOOL],
            extra_headers={"x-talon-session-key": key},
        ) as stream:
            first = stream.get_final_completion()
        self.round_trip(first.choices[0].message, first.choices[0].finish_reason, key)


class SessionTest(unittest.TestCase):
    def setUp(self):
        self.gateway = Gateway("plain")
        self.client = self.gateway.client()

    def test_a_session_key_carries_a_conversation_each_message_once(self):
        key = f"py-session-{uuid.uuid4().hex}"
        headers = {"x-talon-session-key": key}
        first = self.client.chat.completions.with_raw_response.create(model=MODEL, messages=HI, extra_headers=headers)
        reply = first.parse().choices[0].message.content
        self.assertEqual(first.headers.get("x-talon-session-key"), key)
        second = self.client.chat.completions.with_raw_response.create(
            model=MODEL,
            messages=HI + [{"role": "assistant", "content": reply}, {"role": "user", "content": "again"}],
            extra_headers=headers,
        )
        self.assertEqual(second.headers.get("x-talon-session-key"), key)
        self.assertEqual(second.parse().choices[0].message.content, PLAIN_TEXT)
        self.assertNotEqual(first.headers["x-talon-run-id"], second.headers["x-talon-run-id"])
        self.assertEqual(
            self.gateway.session_texts(key),
            [("user", "hi"), ("assistant", PLAIN_TEXT), ("user", "again"), ("assistant", PLAIN_TEXT)],
        )

    def test_without_a_key_each_call_has_its_own_session(self):
        keys = set()
        for _ in range(2):
            raw = self.client.chat.completions.with_raw_response.create(model=MODEL, messages=HI)
            keys.add(raw.headers.get("x-talon-session-key"))
        self.assertEqual(len(keys), 2, keys)
        self.assertNotIn(None, keys)
        for key in keys:
            self.assertEqual(self.gateway.session_texts(key), [("user", "hi"), ("assistant", PLAIN_TEXT)])


if __name__ == "__main__":
    unittest.main()
