"""/v1/responses through the official Python client (openai 3.51.0): a
plain response, a server-side tool as an `mcp_call` item, streamed events
and the stream helper, a client tool answered through
`previous_response_id`, and the ids that name nothing."""

import json
import unittest

import openai

from common import (
    CLIENT_TEXT,
    CLIENT_USAGE,
    MODEL,
    PLAIN_TEXT,
    PLAIN_USAGE,
    RESPONSES_WEATHER_TOOL,
    TOOL_TEXT,
    TOOL_USAGE,
    Gateway,
    assert_openai_error,
    responses_usage,
)


def message_text(item):
    return "".join(part.text for part in item.content if part.type == "output_text")


class ResponsesTest(unittest.TestCase):
    def setUp(self):
        self.plain = Gateway("plain")
        self.tool = Gateway("tool")

    def test_a_response(self):
        response = self.plain.client().responses.create(model=MODEL, input="hi")
        self.assertTrue(response.id.startswith("resp_"), response.id)
        self.assertEqual(
            (response.object, response.status, response.model, response.output_text),
            ("response", "completed", MODEL, PLAIN_TEXT),
        )
        self.assertEqual([item.type for item in response.output], ["message"])
        message = response.output[0]
        self.assertEqual((message.role, message.status, message_text(message)), ("assistant", "completed", PLAIN_TEXT))
        self.assertEqual(
            {k: v for k, v in response.usage.to_dict().items() if not k.endswith("_details")},
            responses_usage(PLAIN_USAGE),
        )

    def test_previous_response_id_continues_its_session(self):
        client = self.plain.client()
        first = client.responses.with_raw_response.create(model=MODEL, input="hi")
        key = first.headers.get("x-talon-session-key")
        self.assertTrue(key, dict(first.headers))
        second = client.responses.with_raw_response.create(
            model=MODEL, input="again", previous_response_id=first.parse().id
        )
        self.assertEqual(second.headers.get("x-talon-session-key"), key)
        response = second.parse()
        self.assertEqual((response.output_text, response.previous_response_id), (PLAIN_TEXT, first.parse().id))
        self.assertEqual(
            self.plain.session_texts(key),
            [("user", "hi"), ("assistant", PLAIN_TEXT), ("user", "again"), ("assistant", PLAIN_TEXT)],
        )

    def test_a_server_tool_is_an_mcp_call_item(self):
        response = self.tool.client().responses.create(model=MODEL, input="hi")
        self.assertEqual((response.status, response.output_text), ("completed", TOOL_TEXT))
        # Reasoning items (the progress text) may come between; not compared.
        items = [item for item in response.output if item.type != "reasoning"]
        self.assertEqual([item.type for item in items], ["mcp_call", "message"], response.output)
        call = items[0]
        self.assertEqual((call.server_label, call.name, call.status), ("talon", "list", "completed"))
        self.assertEqual(json.loads(call.arguments), {"path": "."})
        self.assertIsNone(call.error)
        self.assertEqual(
            {k: v for k, v in response.usage.to_dict().items() if not k.endswith("_details")},
            responses_usage(TOOL_USAGE),
        )

    def events_of(self, stream):
        events = list(stream)
        self.assertTrue(events)
        numbers = [e.sequence_number for e in events]
        self.assertEqual(numbers, sorted(set(numbers)), "strictly increasing sequence numbers")
        return events

    def test_a_streamed_response(self):
        events = self.events_of(self.tool.client().responses.create(model=MODEL, input="hi", stream=True))
        types = [e.type for e in events]
        self.assertEqual((types[0], types[-1]), ("response.created", "response.completed"), types)
        self.assertEqual(types.count("response.completed"), 1, types)
        self.assertEqual("".join(e.delta for e in events if e.type == "response.output_text.delta"), TOOL_TEXT)
        # Every item is announced before its parts and deltas, and closed.
        added = [e.item.type for e in events if e.type == "response.output_item.added"]
        done = [e.item.type for e in events if e.type == "response.output_item.done"]
        self.assertEqual([t for t in added if t != "reasoning"], ["mcp_call", "message"])
        self.assertEqual(added, done)
        first_delta = types.index("response.output_text.delta")
        self.assertLess(types.index("response.content_part.added"), first_delta, types)
        completed = events[-1].response
        ids = {e.response.id for e in events if hasattr(e, "response")}
        self.assertEqual(ids, {completed.id}, "one response id on every snapshot")
        self.assertEqual((completed.status, completed.output_text), ("completed", TOOL_TEXT))

    def test_the_stream_helper(self):
        with self.tool.client().responses.stream(model=MODEL, input="hi") as stream:
            events = self.events_of(stream)
            final = stream.get_final_response()
        self.assertEqual(events[0].type, "response.created")
        self.assertEqual((final.status, final.output_text), ("completed", TOOL_TEXT))
        self.assertEqual([e.snapshot for e in events if e.type == "response.output_text.delta"][-1], TOOL_TEXT)

    def test_an_unknown_model_is_not_found(self):
        with self.assertRaises(openai.NotFoundError) as caught:
            self.plain.client().responses.create(model="talon/nobody", input="hi")
        assert_openai_error(self, caught.exception, 404, "model_not_found")

    def test_an_unknown_previous_response_is_not_found(self):
        with self.assertRaises(openai.NotFoundError) as caught:
            self.plain.client().responses.create(model=MODEL, input="hi", previous_response_id="resp_nothing")
        assert_openai_error(self, caught.exception, 404, "previous_response_not_found")

    def test_an_unknown_response_is_not_found(self):
        with self.assertRaises(openai.NotFoundError) as caught:
            self.plain.client().responses.retrieve("resp_nothing")
        self.assertEqual(caught.exception.status_code, 404)


class ResponsesClientToolTest(unittest.TestCase):
    def setUp(self):
        self.client = Gateway("client").client()

    def check_call(self, first):
        self.assertEqual(first.status, "completed")
        calls = [item for item in first.output if item.type == "function_call"]
        self.assertEqual(len(calls), 1, first.output)
        call = calls[0]
        self.assertTrue(call.call_id, call)
        self.assertEqual(call.name, "get_weather")
        self.assertEqual(json.loads(call.arguments), {"city": "Paris"})
        self.assertEqual(first.output_text, "")
        self.assertEqual(
            {k: v for k, v in first.usage.to_dict().items() if not k.endswith("_details")},
            responses_usage(CLIENT_USAGE[0]),
        )
        return call

    def answer(self, first, call, **params):
        return self.client.responses.create(
            model=MODEL,
            previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
            tools=[RESPONSES_WEATHER_TOOL],
            **params,
        )

    def test_a_function_call_answered_through_previous_response_id(self):
        first = self.client.responses.create(
            model=MODEL, input="What is the weather in Paris?", tools=[RESPONSES_WEATHER_TOOL]
        )
        call = self.check_call(first)
        final = self.answer(first, call)
        self.assertNotEqual(final.id, first.id)
        self.assertEqual(
            (final.status, final.output_text, final.previous_response_id), ("completed", CLIENT_TEXT, first.id)
        )
        self.assertEqual([item.type for item in final.output], ["message"])
        self.assertEqual(
            {k: v for k, v in final.usage.to_dict().items() if not k.endswith("_details")},
            responses_usage(CLIENT_USAGE[1]),
        )

    def test_a_function_call_streamed_through_the_helper(self):
        with self.client.responses.stream(
            model=MODEL, input="What is the weather in Paris?", tools=[RESPONSES_WEATHER_TOOL]
        ) as stream:
            types = [e.type for e in stream]
            first = stream.get_final_response()
        self.assertIn("response.function_call_arguments.done", types)
        call = self.check_call(first)
        with self.client.responses.stream(
            model=MODEL,
            previous_response_id=first.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
            tools=[RESPONSES_WEATHER_TOOL],
        ) as stream:
            final = stream.get_final_response()
        self.assertEqual((final.status, final.output_text), ("completed", CLIENT_TEXT))


if __name__ == "__main__":
    unittest.main()
