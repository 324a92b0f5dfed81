"""Background responses through the official Python client (openai
3.51.0), on the slow gateway (the model lists the workspace, then answers
after 1.5 s while heartbeats flow): a stream cut and resumed with
`starting_after` (the helper, which replays then filters, and the raw
retrieve, which sends only later events), snapshots, cancel, and a resume
after the gateway was SIGKILLed and restarted."""

import time
import unittest

from common import MODEL, SLOW_TEXT, Gateway

TERMINAL = ("response.completed", "response.failed", "response.incomplete")


def keys(events):
    return [(e.sequence_number, e.type) for e in events]


def start_and_cut(test, client, count=3):
    """A background streamed response whose stream is closed after `count`
    events: (response id, the events read)."""
    stream = client.responses.create(model=MODEL, input="hi", background=True, stream=True)
    before = []
    for event in stream:
        before.append(event)
        if len(before) == count:
            break
    stream.close()
    test.assertEqual(len(before), count, keys(before))
    test.assertEqual(before[0].type, "response.created")
    # Stream events tell only what the event log does, so every replay is
    # the same stream: `background` (a request option the log does not
    # keep) is null there, and true only in a background create's own body.
    test.assertIsNone(before[0].response.background, before[0].response)
    return before[0].response.id, before


class BackgroundTest(unittest.TestCase):
    def setUp(self):
        self.gateway = Gateway("slow")
        self.client = self.gateway.client()

    def test_a_cut_stream_resumes_after_its_last_event(self):
        response_id, before = start_and_cut(self, self.client)
        cut = before[-1].sequence_number
        # The run is still answering (1.5 s): its snapshot says so.
        snapshot = self.client.responses.retrieve(response_id)
        self.assertEqual(snapshot.id, response_id)
        self.assertIn(snapshot.status, ("queued", "in_progress"), snapshot)

        # Raw: only the events after the cut, live, to the end.
        started = time.monotonic()
        after = list(self.client.responses.retrieve(response_id, stream=True, starting_after=cut))
        self.assertGreater(time.monotonic() - started, 0.3, "the resumed stream followed the slow turn live")
        self.assertTrue(after, "events after the cut")
        self.assertTrue(all(e.sequence_number > cut for e in after), keys(after))
        self.assertEqual(after[-1].type, "response.completed", keys(after))

        # The same response uninterrupted: a replay from its first event.
        whole = list(self.client.responses.retrieve(response_id, stream=True))
        self.assertEqual(keys(before) + keys(after), keys(whole))
        self.assertEqual(
            "".join(e.delta for e in after if e.type == "response.output_text.delta"), SLOW_TEXT, keys(after)
        )
        self.assertEqual((whole[-1].response.status, whole[-1].response.output_text), ("completed", SLOW_TEXT))

        # The helper replays and filters: the same events after the cut.
        with self.client.responses.stream(response_id=response_id, starting_after=cut) as stream:
            resumed = list(stream)
            final = stream.get_final_response()
        self.assertEqual(keys(resumed), keys(after))
        self.assertEqual((final.id, final.status, final.output_text), (response_id, "completed", SLOW_TEXT))

        snapshot = self.client.responses.retrieve(response_id)
        self.assertEqual((snapshot.status, snapshot.output_text), ("completed", SLOW_TEXT))

    def test_a_background_response_without_a_stream(self):
        created = self.client.responses.create(model=MODEL, input="hi", background=True)
        self.assertTrue(created.id.startswith("resp_"), created.id)
        self.assertIn(created.status, ("queued", "in_progress"), created)
        self.assertTrue(created.background)
        with self.client.responses.stream(response_id=created.id) as stream:
            final = stream.get_final_response()
        self.assertEqual((final.id, final.output_text), (created.id, SLOW_TEXT))
        self.assertEqual(self.client.responses.retrieve(created.id).status, "completed")

    def test_cancel(self):
        created = self.client.responses.create(model=MODEL, input="hi", background=True)
        cancelled = self.client.responses.cancel(created.id)
        self.assertEqual((cancelled.id, cancelled.status), (created.id, "cancelled"))
        self.assertEqual(self.client.responses.retrieve(created.id).status, "cancelled")
        # Its stream ends, after the events it had.
        events = list(self.client.responses.retrieve(created.id, stream=True))
        self.assertEqual(events[0].type, "response.created")
        self.assertNotIn("response.completed", [e.type for e in events])
        self.assertNotIn(SLOW_TEXT, "".join(e.delta for e in events if e.type == "response.output_text.delta"))


class RestartTest(unittest.TestCase):
    def test_a_resume_after_the_gateway_was_killed_and_restarted(self):
        gateway = Gateway("restart")
        token = gateway.token
        response_id, before = start_and_cut(self, gateway.client(), count=4)
        cut = before[-1].sequence_number
        gateway.restart()
        # The first start's admin token is stored: it still works.
        self.assertEqual([m.id for m in gateway.client(token).models.list().data], [MODEL])
        client = gateway.client(token)

        after = list(client.responses.retrieve(response_id, stream=True, starting_after=cut))
        self.assertTrue(after, "events after the cut")
        numbers = [e.sequence_number for e in after]
        self.assertTrue(numbers[0] > cut and numbers == sorted(set(numbers)), keys(after))
        self.assertIn(after[-1].type, TERMINAL, keys(after))
        self.assertEqual([e.type for e in after].count(after[-1].type), 1, keys(after))

        whole = list(client.responses.retrieve(response_id, stream=True))
        self.assertEqual(keys(whole[: len(before)]), keys(before), "the pre-kill events replay unchanged")
        self.assertEqual(keys(whole), keys(before) + keys(after))
        # The helper (replays, then filters) accumulates the whole of it.
        with client.responses.stream(response_id=response_id, starting_after=cut) as stream:
            self.assertEqual(keys(stream), keys(after))
            if after[-1].type == "response.completed":
                self.assertEqual(stream.get_final_response().output_text, SLOW_TEXT)
        status = {"response.completed": "completed", "response.failed": "failed", "response.incomplete": "incomplete"}
        self.assertEqual(client.responses.retrieve(response_id).status, status[after[-1].type])


if __name__ == "__main__":
    unittest.main()
