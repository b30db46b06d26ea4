"""The openai backend's chat requests: each prompt checked against the context before it is sent, the answer
checked (no choices, null content, a cut the server made short of ``max_tokens`` and the context are retried),
stop strings beyond the API's four applied to the answer."""

from __future__ import annotations

import time
from typing import Any

from sumjudge.llm.errors import PromptTooLongError
from sumjudge.llm.fitting import certainly_fits
from sumjudge.llm.openai_http import MalformedAnswer
from sumjudge.llm.openai_tokens import OpenAITokens
from sumjudge.llm.types import ChatRequest, ChatResponse

# A short finish_reason=length from a server that states no context counts as a real cut once asked again this many
# times with the same seed and cut the same way each time (a fault's retry gives the fault-free answer)
CUT_CONFIRMATIONS = 2
# A prompt over this many characters (about a million tokens, more than any served context) is not sent to a
# server that does not state its context: a 10 MB document is a mistake, not a request.
MAX_PROMPT_CHARS_UNKNOWN_CONTEXT = 4_000_000

# The most stop strings the OpenAI API takes; more are applied to the answer here.
SERVER_STOP_LIMIT = 4


def apply_stops(text: str, stops: tuple[str, ...]) -> str | None:
    """``text`` up to the first of ``stops`` it contains (what a server applying them would have returned), or
    None when it contains none."""
    cuts = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return text[:min(cuts)] if cuts else None



class OpenAIChat(OpenAITokens):
    """Chat requests: checked, sent, their answers read."""

    extra_body: dict[str, Any]  # server extensions sent with every chat request (bench: ignore_eos)

    @staticmethod
    def _check_chat(resp) -> None:
        choices = getattr(resp, "choices", None)
        if not choices:
            raise MalformedAnswer("the answer has no choices")
        msg = getattr(choices[0], "message", None)
        if msg is None or not isinstance(getattr(msg, "content", None), str):
            raise MalformedAnswer("the answer's message content is null")

    def _check_cut(self, resp, max_tokens: int, cuts: list | None = None) -> None:
        """``finish_reason=length`` means the answer reached ``max_tokens`` or the model's context. One that
        stopped short of both (per the server's own usage) was ended by the server: a fault, retried and never
        cached. Where the server does not say its context, a short length finish may be a real cut at the
        context or a fault: the same request (same seed) is asked again, and the cut is kept as an answer only
        when the server gives the same cut ``CUT_CONFIRMATIONS`` + 1 times in a row (a real cut is cut again; a
        fault's retry gives the fault-free answer, and the same fault that many times running is unlikely).
        ``cuts``: the short cuts this request got so far."""
        ch = resp.choices[0]
        usage = getattr(resp, "usage", None)
        done = getattr(usage, "completion_tokens", None)
        if ch.finish_reason != "length" or done is None or done >= max_tokens:
            return
        if not self.context_length:
            cut = (ch.message.content, done)
            before = (cuts or [])[-CUT_CONFIRMATIONS:]
            if len(before) == CUT_CONFIRMATIONS and all(c == cut for c in before):
                return  # the same cut again and again: a real cut at a context the server does not state
            if cuts is not None:
                cuts.append(cut)
            raise MalformedAnswer(f"the server ended the answer at {done} of {max_tokens} tokens with "
                                  "finish_reason=length and states no context: asked again, to tell a cut from a "
                                  "fault")
        prompt = getattr(usage, "prompt_tokens", None) or 0
        if prompt + done >= self.context_length:
            return  # the context is full: a real cut
        raise MalformedAnswer(f"the server ended the answer at {done} of {max_tokens} tokens with "
                              "finish_reason=length (neither max_tokens nor the context was reached)")

    def _check_answer(self, max_tokens: int):
        cuts: list = []  # this request's short cuts (a server that states no context)

        def check(resp) -> None:
            self._check_chat(resp)
            self._check_cut(resp, max_tokens, cuts)
        return check

    @staticmethod
    def _check_any(resp) -> None:
        if not getattr(resp, "choices", None):
            raise MalformedAnswer("the answer has no choices")

    def _check_fits(self, tag: str, prompt_tokens: int, max_new_tokens: int) -> None:
        if self.context_length and prompt_tokens + max_new_tokens > self.context_length:
            raise PromptTooLongError(tag, prompt_tokens, max_new_tokens, self.context_length)

    async def _one(self, r: ChatRequest) -> ChatResponse:
        t0 = time.perf_counter()
        if self.tokenizes and self.context_length:  # never let the server cut the answer short
            if not await certainly_fits(r.messages, r.max_new_tokens, self.context_length, self.aprompt_tokens):
                self._check_fits(r.tag, await self.aprompt_tokens(r.messages), r.max_new_tokens)
        elif not self.context_length:  # nothing to fit against: refuse what no served model reads
            chars = sum(len(m.get("content") or "") for m in r.messages)
            if chars > MAX_PROMPT_CHARS_UNKNOWN_CONTEXT:
                raise PromptTooLongError(r.tag, chars, r.max_new_tokens, MAX_PROMPT_CHARS_UNKNOWN_CONTEXT,
                                         unit="characters", note=f"{self.where} does not state its context; give it "
                                         "(context_length) so that documents are cut to fit")
        kw = dict(messages=r.messages, temperature=r.temperature, max_tokens=r.max_new_tokens, n=1)
        if not r.greedy:
            kw["top_p"] = r.top_p
            # one seed per (seed, sample) so samples differ and each one is reproducible where the server honours seeds
            kw["seed"] = ((r.seed or 0) * 1_000_003 + r.sample_index) % (2 ** 31)
        if r.stop:  # the API takes four; the others are applied to the answer below
            kw["stop"] = list(r.stop)[:SERVER_STOP_LIMIT]
        if self.extra_body:
            kw["extra_body"] = self.extra_body
        resp = await self._call(self._post_chat, check=self._check_answer(r.max_new_tokens), **kw)
        ch = resp.choices[0]
        usage = resp.usage
        text, finish = ch.message.content, ch.finish_reason or "stop"
        cut = apply_stops(text, r.stop[SERVER_STOP_LIMIT:])
        if cut is not None:  # completion_tokens stay the server's count (the tokens it generated)
            text, finish = cut, "stop"
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None)
        replica = getattr(resp, "system_fingerprint", None)
        return ChatResponse(text=text, finish_reason=finish,
                            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                            latency_s=time.perf_counter() - t0, backend="openai", model=self.model,
                            served_by=replica if isinstance(replica, str) and replica else None,
                            cached_tokens=cached if isinstance(cached, int) else None)

    async def _post_chat(self, **body):
        """``POST /chat/completions`` with ``body`` as given: the SDK's request path (its errors, which ``_call``
        retries) without its per-call transformation of the parameters, which at scale costs the client more time
        than the request itself. ``extra_body`` joins the body, as the SDK does it."""
        from openai.types.chat import ChatCompletion

        extra = body.pop("extra_body", None) or {}
        headers = body.pop("extra_headers", None)
        return await self.client.post("/chat/completions", body={**body, **extra}, cast_to=ChatCompletion,
                                      options={"headers": headers} if headers else {})

    async def generate(self, reqs: list[ChatRequest], on_results=None,
                       sessions: list[str | None] | None = None) -> list[ChatResponse | Exception]:
        return await self._each(self._one, reqs, on_results, sessions)
