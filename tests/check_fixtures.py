"""An answer, its sources and the canned replies of a claim-checking LLM, shared by the check tests.

The replies are what a model would send; what ragloupe makes of them
(spans, offsets, segments, verdict downgrades, scores) is what the tests pin.
"""

from __future__ import annotations

import json

from llm_server import Reply, chat_reply, prompt_of

ACCOUNTS = ("Summary of the year. Core Revenue Resource Limit 1,278,771 and outturn 1,278,002 (£000). "
            "The Board met every statutory financial target.")
NOTES = "Notes to the accounts. The Board reported an underspend of £0.769m against its limit."
SOURCES = [{"title": "Accounts", "text": ACCOUNTS, "source_type": "file", "link": "https://example.org/a"},
           {"title": "Notes", "text": NOTES, "source_type": "web", "link": "https://example.org/n"}]

ANSWER = ("The Core Revenue Resource Limit was £1,278,771 (£000). "
          "The Board received £50m of extra funding. It also opened a hospital.")
SUPPORTED_SPAN = "The Core Revenue Resource Limit was £1,278,771 (£000)"
CONTRADICTED_SPAN = "The Board received £50m of extra funding"
SUPPORT_QUOTE = "Core Revenue Resource Limit 1,278,771"
CONTRADICT_QUOTE = "The Board reported an underspend of £0.769m"

EXTRACTED = {"claims": [
    {"claim": "The Core Revenue Resource Limit was £1,278,771 thousand.", "span": SUPPORTED_SPAN},
    {"claim": "The Board received £50m of extra funding.", "span": CONTRADICTED_SPAN},
    {"claim": "A new hospital was opened by the Board.", "span": "a brand new hospital opened its doors"},
]}
VERIFIED = {"results": [
    {"id": 1, "verdict": "supported", "source": 1, "quote": SUPPORT_QUOTE,
     "rationale": "The accounts state this limit.", "confidence": 0.9},
    {"id": 2, "verdict": "contradicted", "source": 2, "quote": CONTRADICT_QUOTE,
     "rationale": "The notes report an underspend, not extra funding.", "confidence": "high"},
    {"id": 3, "verdict": "unverified", "source": None, "quote": ""},
]}

DOWN_MARKER = "LLM-DOWN-MARKER"  # an answer holding this gets HTTP 503 from the fake server
SLOW_MARKER = "LLM-SLOW-MARKER"  # ... and this one a reply only after SLOW_S
SLOW_S = 8.0


def claim_checker(path: str, request: dict) -> Reply:
    """Extraction or verification reply, by what the prompt asks; markers make the server fail."""
    prompt = prompt_of(request)
    if DOWN_MARKER in prompt:
        return Reply(json.dumps({"error": "model is loading"}).encode(), status=503)
    if SLOW_MARKER in prompt:
        return Reply(chat_reply(path, "{}").body, delay_s=SLOW_S)
    if "Claims:" in prompt:
        return chat_reply(path, json.dumps(VERIFIED))
    if "List every atomic factual claim" in prompt:
        return chat_reply(path, "```json\n" + json.dumps(EXTRACTED) + "\n```")
    return chat_reply(path, "The Core Revenue Resource Limit was £1,278,771 (£000) [1].")
