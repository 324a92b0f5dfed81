"""Runs the Python suite of tests/openai (chat_test, responses_test,
background_test; or the unittest names given as arguments) and prints one
summary line. tests/openai/run starts the gateways and runs this."""

import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)

MODULES = ["chat_test", "responses_test", "background_test"]

loader = unittest.defaultTestLoader
suite = loader.loadTestsFromNames(sys.argv[1:] or MODULES)
result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
skipped = len(result.skipped)
passed = result.testsRun - failed - skipped
print(f"openai-python: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(0 if result.wasSuccessful() else 1)
