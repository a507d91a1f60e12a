"""A loopback stand-in for four moderation APIs, answering in the shapes their public
documentation gives (field names and nesting as documented; the numbers are ours):

- OpenAI: https://platform.openai.com/docs/api-reference/moderations (openai-python
  ``types/moderation.py``): ``results[0].category_scores``, some categories null.
- Azure AI Content Safety: https://learn.microsoft.com/rest/api/contentsafety/text-operations/
  analyze-text: ``{"blocklistsMatch": [], "categoriesAnalysis": [{"category", "severity"}]}``.
- Google Model Armor: https://cloud.google.com/security-command-center/docs/reference/
  model-armor/rest/v1/SanitizationResult: ``sanitizationResult.filterResults.rai.raiFilterResult
  .raiFilterTypeResults.<type>.{matchState, confidenceLevel}`` (beside csam, sdp, …).
- Lakera Guard: https://docs.lakera.ai/api-reference/lakera-api/guard-results/get-results:
  ``{"results": [{"project_id", "policy_id", "detector_id", "detector_type", "result",
  "custom_matched", "message_id"}]}``.

How harmful a text looks is read from a word in it: "bomb" high, "knife" medium, else none.
A wrong key gets a 401 that echoes the credential (as a careless gateway does), and
``fail_first`` calls get a 429 with Retry-After first.
"""

from __future__ import annotations

import json
import threading

from quiet_handler import LoopbackServer, QuietHandler


def level(text: str) -> int:
    return 2 if "bomb" in text else 1 if "knife" in text else 0


def openai_reply(text: str) -> dict:
    top = [0.00012, 0.41, 0.93][level(text)]
    scores = {"harassment": 0.0012, "harassment/threatening": 0.0008, "hate": 0.0001,
              "illicit": top, "illicit/violent": None, "self-harm": 0.0003,
              "sexual": 0.00001, "violence": top / 2, "violence/graphic": 0.004}
    return {"id": "modr-1234", "model": "omni-moderation-latest",
            "results": [{"flagged": top > 0.5,
                         "categories": {k: (v or 0) > 0.5 for k, v in scores.items()},
                         "category_scores": scores,
                         "category_applied_input_types": {k: ["text"] for k in scores}}]}


def azure_reply(text: str, output_type: str) -> dict:
    severity = [0, 3, 6][level(text)]
    if output_type == "FourSeverityLevels":
        severity = severity // 2 * 2
    return {"blocklistsMatch": [],
            "categoriesAnalysis": [{"category": "Hate", "severity": 0},
                                   {"category": "SelfHarm", "severity": 0},
                                   {"category": "Sexual", "severity": 0},
                                   {"category": "Violence", "severity": severity}]}


def armor_reply(text: str) -> dict:
    confidence = [None, "MEDIUM_AND_ABOVE", "HIGH"][level(text)]
    dangerous = {"matchState": "MATCH_FOUND" if confidence else "NO_MATCH_FOUND"}
    if confidence:
        dangerous["confidenceLevel"] = confidence
    ok = {"executionState": "EXECUTION_SUCCESS", "matchState": "NO_MATCH_FOUND"}
    return {"sanitizationResult": {
        "filterMatchState": dangerous["matchState"], "invocationResult": "SUCCESS",
        "filterResults": {
            "csam": {"csamFilterFilterResult": ok},
            "malicious_uris": {"maliciousUriFilterResult": ok},
            "rai": {"raiFilterResult": {
                "executionState": "EXECUTION_SUCCESS", "matchState": dangerous["matchState"],
                "raiFilterTypeResults": {
                    "sexually_explicit": {"matchState": "NO_MATCH_FOUND"},
                    "hate_speech": {"matchState": "NO_MATCH_FOUND"},
                    "harassment": {"matchState": "NO_MATCH_FOUND"},
                    "dangerous": dangerous}}},
            "pi_and_jailbreak": {"piAndJailbreakFilterResult": ok},
            "sdp": {"sdpFilterResult": {"inspectResult": ok}}}}}


def lakera_reply(text: str) -> dict:
    content = ["l5_unlikely", "l3_likely", "l1_confident"][level(text)]
    common = {"project_id": "project-7539648934", "policy_id": "policy-a2412e48",
              "custom_matched": False, "message_id": 0}
    return {"results": [
        {**common, "detector_id": "detector-lakera-pinj", "detector_type": "prompt_attack",
         "result": "l4_less_likely"},
        {**common, "detector_id": "detector-lakera-moderation-1",
         "detector_type": "moderated_content/crime", "result": content}]}


class ModerationServer(LoopbackServer):
    """Serves all four APIs on 127.0.0.1; ``calls`` records (path, headers, body) of each."""

    def __init__(self, key: str, fail_first: int = 0):
        self.key, self.fail_first, self.calls = key, fail_first, []
        self.lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.calls.append((self.path, dict(self.headers), body))
                    n = len(server.calls)
                status, reply, extra = server.answer(self.path, self.headers, body, n)
                self.send_bytes(status, json.dumps(reply).encode(), headers=extra)

        self.url = self.serve(Handler)

    def answer(self, path: str, headers, body: dict, n: int) -> tuple[int, dict, dict]:
        credential = headers.get("Authorization") or headers.get("Ocp-Apim-Subscription-Key")
        if credential not in (f"Bearer {self.key}", self.key):
            return 401, {"error": f"invalid credential {credential}"}, {}
        if n <= self.fail_first:
            return 429, {"error": "rate limited"}, {"Retry-After": "0.01"}
        if path == "/v1/moderations":
            return 200, openai_reply(body["input"]), {}
        if path.startswith("/contentsafety/text:analyze"):
            return 200, azure_reply(body["text"], body.get("outputType", "FourSeverityLevels")), {}
        if path.endswith(":sanitizeUserPrompt"):
            return 200, armor_reply(body["userPromptData"]["text"]), {}
        if path.endswith(":sanitizeModelResponse"):
            return 200, armor_reply(body["modelResponseData"]["text"]), {}
        if path == "/v2/guard/results":
            return 200, lakera_reply(body["messages"][-1]["content"]), {}
        return 404, {"error": f"no route {path}"}, {}
