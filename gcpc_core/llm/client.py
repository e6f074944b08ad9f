"""`LLM`, the one client every LLM call in GCPC goes through (`LLM.complete`): a configured endpoint
with the response cache, the structured-mode negotiation, token accounting and a concurrency bound.

* an identical request (model, messages, schema, temperature, prompt version) makes no HTTP call
  (`cache.request_key`), and identical requests in flight at once share one call;
* HTTP retries, backoff and timeouts are the `openai` client's own (`max_retries`, `timeout`; it
  honours Retry-After) — there is no hand-written retry loop here;
* a reply that is malformed, fails the schema, is truncated or is a refusal is never cached and
  raises `LLMReplyError` (or `LLMRefusal`) carrying the raw text, so the caller can do one repair
  round and record the reason (`reply.interpret_reply`);
* at most `config.concurrency` HTTP requests are in flight at once (an asyncio semaphore);
* every call is recorded in the DB with its tokens and estimated cost, and summed into the run.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from ..store import LLMCacheRow, LLMCallRow, utcnow
from .cache import HeldWrites, request_key
from .config import InvalidSetting, LLMConfig, StructuredMode
from .errors import LLMCallError, LLMError, LLMNotConfigured, LLMReplyError, call_error
from .negotiation import Negotiation
from .pricing import Price, RunTotals, Usage, estimate_cost, load_prices, price_for
from .reply import LLMResult, clip_raw, interpret_reply
from .request import Message, canonical_json, chat_request_body
from .transport import PLACEHOLDER_API_KEY, client_class, http_client, plain_http, ssl_context

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from ..store import Store

__all__ = ["LLM"]

T = TypeVar("T", bound=BaseModel)


@dataclass
class _LoopState:
    """Things bound to one event loop: the HTTP client's pool, the semaphore, in-flight calls."""

    loop: asyncio.AbstractEventLoop
    client: AsyncOpenAI
    semaphore: asyncio.Semaphore
    inflight: dict[str, asyncio.Future[dict[str, Any] | None]] = field(default_factory=dict)
    in_flight_now: int = 0
    max_in_flight: int = 0


class LLM:
    """A configured model endpoint with cache, accounting and a concurrency bound.

    Use one instance per run: `runs.run_stage(store, kind, units, work_one, llm=llm, ...)` records
    the run; calls made outside a run are recorded with no run id.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        store: Store | None = None,
        prices: Mapping[str, Price] | None = None,
    ):
        problems = config.problems()
        if problems:
            raise LLMNotConfigured("LLM not configured: " + "; ".join(problems))
        self.config = config
        self.model: str = config.model  # type: ignore[assignment]  # problems() guarantees it
        self.store = store
        self.prices = load_prices() if prices is None else dict(prices)
        self.price = price_for(self.model, self.prices)
        self.totals = RunTotals()
        self._state: _LoopState | None = None
        self._held: HeldWrites | None = None
        """Set inside `holding_writes`: cache rows and call records wait there instead of being written."""
        row = store.runs.llm_mode(config.endpoint, self.model) if store is not None else None
        self.context_window: int | None = config.context_window or (row.context_window if row else None)
        """Tokens of context for a budget before sending: the setting, else what `llm check` found
        the server reporting; None when neither says (no budget is applied)."""
        self._negotiation = Negotiation.start(config, self.model, store, row.mode if row else None)
        if not plain_http(config.base_url):
            ssl_context()  # start building it now (see transport.ssl_context)

    @classmethod
    def from_env(cls, model: str | None = None, *, store: Store | None = None, **overrides: Any) -> LLM:
        """The usual way in: config from the environment, `model` from `--model` when given; an
        override given as None (e.g. `concurrency=None`, no `--concurrency`) leaves the environment's
        value. A variable holding an invalid value raises LLMNotConfigured naming it."""
        try:
            config = LLMConfig.from_env(model, **overrides)
        except InvalidSetting as exc:
            raise LLMNotConfigured(f"LLM not configured: {exc}") from None
        return cls(config, store=store)

    @property
    def structured_mode(self) -> StructuredMode | None:
        """The structured mode requests use now: the setting, or what `auto` negotiated or found
        stored; None before an `auto` layer's first successful call."""
        return self._mode

    @property
    def _mode(self) -> StructuredMode | None:
        """The negotiation's current mode, as the layer's own methods read it."""
        return self._negotiation.mode

    @property
    def rejected_modes(self) -> dict[str, str]:
        """Modes the endpoint rejected while negotiating, with the server's message."""
        return dict(self._negotiation.rejected)

    @property
    def max_in_flight(self) -> int:
        """Most HTTP requests this instance had in flight at once (on its current event loop)."""
        return self._state.max_in_flight if self._state else 0

    # -- runs --

    def new_run_totals(self) -> RunTotals:
        """Fresh totals for a run that starts (`runs.run_stage` records it): this instance's calls are
        summed into them and tagged with their `run_id`."""
        self.totals = RunTotals(structured_mode=self._mode)
        return self.totals

    @contextmanager
    def holding_writes(self) -> Iterator[HeldWrites]:
        """Hold cache rows and call records back (see `HeldWrites`) for the caller to write with its
        own results. Whatever is still held when the block ends is written then, in its own
        transaction, so nothing is lost if the caller does not write it."""
        held = self._held = HeldWrites()
        try:
            yield held
        finally:
            self._held = None
            if held and self.store is not None:
                with self.store.atomic():
                    held.write(self.store)
                held.clear()

    # -- calls --

    def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            client = client_class()(
                api_key=self.config.api_key or PLACEHOLDER_API_KEY,
                base_url=self.config.base_url,
                timeout=self.config.timeout,
                max_retries=self.config.max_retries,
                http_client=http_client(self.config.base_url),
            )
            self._state = _LoopState(loop, client, asyncio.Semaphore(self.config.concurrency))
        return self._state

    async def aclose(self) -> None:
        """Close the HTTP client of the current event loop."""
        if self._state is not None:
            state, self._state = self._state, None
            await state.client.close()

    def _key(
        self,
        messages: Sequence[Message],
        response_model: type[BaseModel],
        temperature: float | None,
        prompt_version: str,
    ) -> str:
        return request_key(
            model=self.model,
            messages=messages,
            response_model=response_model,
            temperature=temperature,
            prompt_version=prompt_version,
        )

    def client(self) -> AsyncOpenAI:
        """The HTTP client of the running event loop (probes of other server routes reuse its pool)."""
        return self._loop_state().client

    def request_body(
        self,
        messages: Sequence[Message],
        response_model: type[BaseModel],
        *,
        mode: StructuredMode | None = None,
        temperature: float | None = None,
    ) -> dict[str, Any]:
        """The body a call would send now (or in `mode`, at `temperature` instead of the configured
        one): what a context budget must count, and what a Batch-API line carries."""
        temp = self.config.temperature if temperature is None else temperature
        return self._body(messages, response_model, temp, mode)

    def _body(
        self,
        messages: Sequence[Message],
        response_model: type[BaseModel],
        temperature: float | None,
        mode: StructuredMode | None = None,
        max_completion_tokens: int | None = None,
    ) -> dict[str, Any]:
        """The request exactly as sent, so a Batch-API line is the body a live call would send.
        Without a mode: the current one, or `parse` (the Batch API is OpenAI's, which takes it);
        without a reply bound: the configured one."""
        return chat_request_body(
            model=self.model,
            messages=messages,
            response_model=response_model,
            mode=mode or self._mode or "parse",
            temperature=temperature,
            max_completion_tokens=max_completion_tokens or self.config.max_completion_tokens,
        )

    async def complete(
        self,
        messages: Sequence[Message],
        response_model: type[T],
        *,
        prompt_version: str,
        tag: str = "",
        temperature: float | None = None,
        max_completion_tokens: int | None = None,
    ) -> LLMResult[T]:
        """One structured call: cached reply, or one HTTP request (with the client's retries).
        `max_completion_tokens` bounds this reply instead of the configured bound (a repair of a
        reply cut at the bound gets more room, see `budget.repair_room`).

        Raises LLMReplyError / LLMRefusal for a bad reply and LLMCallError for a failed call;
        both are recorded before they are raised.
        """
        temp = self.config.temperature if temperature is None else temperature
        key = self._key(messages, response_model, temp, prompt_version)
        state = self._loop_state()
        body = self._cached(key)
        while body is None and key in state.inflight:
            body = await asyncio.shield(state.inflight[key])  # an identical call is on its way
        if body is not None:
            parsed, text = interpret_reply(body, response_model)
            return self._finish(
                LLMResult(parsed, text, self.model, key, Usage(), 0.0, True, 0.0),
                prompt_version=prompt_version,
                tag=tag,
            )
        future: asyncio.Future[dict[str, Any] | None] = state.loop.create_future()
        state.inflight[key] = future
        try:
            result, body = await self._call(state, key, messages, response_model, temp, prompt_version, tag,
                                            max_completion_tokens)
            future.set_result(body)
            return result
        finally:
            if not future.done():
                future.set_result(None)  # the call failed: waiters make their own
            state.inflight.pop(key, None)

    def _cached(self, key: str) -> dict[str, Any] | None:
        """The stored (or held) reply of an identical request, if any. A held one is looked up once:
        a judging run's writing thread may forget it meanwhile (`HeldWrites.forget`, once it is stored)."""
        held = self._held.cache.get(key) if self._held is not None else None
        if held is not None:
            return held[1]
        return self.store.runs.cache_get(key) if self.store is not None else None

    async def _call(
        self,
        state: _LoopState,
        key: str,
        messages: Sequence[Message],
        response_model: type[T],
        temperature: float | None,
        prompt_version: str,
        tag: str,
        max_completion_tokens: int | None = None,
    ) -> tuple[LLMResult[T], dict[str, Any]]:
        import openai

        record = {"prompt_version": prompt_version, "tag": tag, "key": key}
        async with state.semaphore:
            state.in_flight_now += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight_now)
            started = time.monotonic()
            try:
                body, retries = await self._send(state.client, messages, response_model, temperature,
                                                 max_completion_tokens)
            except openai.APIError as exc:
                error = call_error(exc, endpoint=self.config.endpoint, model=self.model,
                                    mode_set=self.config.structured_mode != "auto")
                self._record_failure(error, Usage(), time.monotonic() - started, record, raw=None)
                raise error from exc
            except LLMCallError as error:  # no structured mode is accepted
                self._record_failure(error, Usage(), time.monotonic() - started, record, raw=None)
                raise
            except LLMReplyError as error:
                self._record_failure(error, error.usage, time.monotonic() - started, record, raw=error.raw)
                raise
            finally:
                state.in_flight_now -= 1
            latency = time.monotonic() - started
        result = self.accept_reply(
            body, response_model, key=key, prompt_version=prompt_version, tag=tag, latency=latency, retries=retries
        )
        return result, body

    def accept_reply(
        self,
        body: Mapping[str, Any],
        response_model: type[T],
        *,
        key: str,
        prompt_version: str,
        tag: str,
        latency: float = 0.0,
        retries: int = 0,
        cost_factor: float = 1.0,
    ) -> LLMResult[T]:
        """Validate a reply body, record it and cache it when valid; live and batch replies alike
        (`batch.accept_batch_reply`), so a batched request is held to exactly the rules of a live one;
        `cost_factor` scales its cost estimate (Batch-API discount). Raises LLMReplyError."""
        usage = Usage.from_body(body)
        cost = estimate_cost(usage, self.price)
        cost = None if cost is None else cost * cost_factor
        try:
            parsed, text = interpret_reply(body, response_model)
        except LLMReplyError as error:
            record = {"prompt_version": prompt_version, "tag": tag, "key": key}
            self._record_failure(error, usage, latency, record, raw=error.raw, cost=cost, retries=retries)
            raise
        result = LLMResult(parsed, text, self.model, key, usage, cost, False, latency, retries)
        if self.store is None:
            return self._finish(result, prompt_version=prompt_version, tag=tag)
        if self._held is not None:
            self._held.cache.setdefault(key, (self.model, dict(body), utcnow()))
            return self._finish(result, prompt_version=prompt_version, tag=tag)
        with self.store.atomic():  # the cached reply and its call record: one commit per call
            self.store.runs.cache_put(LLMCacheRow(key=key, model=self.model, response=dict(body), created_at=utcnow()))
            return self._finish(result, prompt_version=prompt_version, tag=tag)

    async def _send(
        self,
        client: AsyncOpenAI,
        messages: Sequence[Message],
        response_model: type[BaseModel],
        temperature: float | None,
        max_completion_tokens: int | None = None,
    ) -> tuple[dict[str, Any], int]:
        """One logical request (the client retries inside): the raw JSON body and retries taken.

        The raw body rather than the SDK's parsed object: it is what the cache stores and what
        a bad reply is reported with. A reply bound above the configured one gets a timeout
        scaled alike: a slow server writes the longer reply in proportionally longer time.
        """
        import httpx2
        import openai

        options: dict[str, Any] = {}
        configured = self.config.max_completion_tokens
        if max_completion_tokens and configured and max_completion_tokens > configured:
            options["timeout"] = self.config.timeout * max_completion_tokens / configured
        while True:
            try:
                mode = self._negotiation.next_mode()
            except LLMCallError:
                self._negotiation.keep_rejections()
                raise
            body = self._body(messages, response_model, temperature, mode, max_completion_tokens)
            # `post` (the SDK's documented route for raw requests) rather than `chat.completions.create`:
            # the body is already complete and validated, and create's recursive param transform cost
            # ~1.5 ms of CPU per call (bench/judge_bench.py); retries, timeouts and errors are the same.
            try:
                response = await client.post("/chat/completions", cast_to=httpx2.Response, body=body,
                                             options=options)  # type: ignore[arg-type]
            except openai.APIStatusError as exc:
                if self._negotiation.fall_back(mode, exc):
                    continue
                self._negotiation.keep_rejections()
                raise
            except openai.APIError:
                self._negotiation.keep_rejections()
                raise
            self._negotiation.settle(mode)
            self.totals.structured_mode = mode
            break
        try:
            body = response.json()
        except ValueError as exc:
            raise LLMReplyError("reply body is not JSON", reason="invalid_body", raw=clip_raw(response.text)) from exc
        if not isinstance(body, dict):
            raise LLMReplyError("reply body is not a JSON object", reason="invalid_body", raw=clip_raw(canonical_json(body)))
        return body, int(response.request.headers.get("x-stainless-retry-count", 0))

    def _finish(self, result: LLMResult[T], *, prompt_version: str, tag: str) -> LLMResult[T]:
        self.totals.add(usage=result.usage, cost=result.cost_usd, cache_hit=result.cache_hit, error=False)
        self._record(
            key=result.key,
            prompt_version=prompt_version,
            tag=tag,
            cache_hit=result.cache_hit,
            usage=result.usage,
            cost=result.cost_usd,
            latency=result.latency_s,
            retries=result.retries,
            status="ok",
        )
        return result

    def _record_failure(
        self,
        error: LLMError,
        usage: Usage,
        latency: float,
        record: Mapping[str, str],
        *,
        raw: str | None,
        cost: float | None = None,
        retries: int = 0,
    ) -> None:
        self.totals.add(usage=usage, cost=cost, cache_hit=False, error=True)
        self._record(
            **record,
            cache_hit=False,
            usage=usage,
            cost=cost,
            latency=latency,
            retries=retries,
            status=error.reason,
            error=str(error),
            raw_reply=raw,
        )

    def _record(self, *, usage: Usage, latency: float, cost: float | None, **fields: Any) -> None:
        if self.store is None:
            return
        row = LLMCallRow(
            run_id=self.totals.run_id,
            created_at=utcnow(),
            model=self.model,
            prompt_tokens=usage.prompt_tokens,
            cached_tokens=usage.cached_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=cost,
            latency_s=round(latency, 4),
            **fields,
        )
        if self._held is not None:
            self._held.calls.append(row)
        else:
            self.store.runs.record_llm_call(row)

    def run_sync(self, work: Callable[[], Awaitable[Any]]) -> Any:
        """Run async work to completion from sync code, closing the HTTP client afterwards."""

        async def main() -> Any:
            try:
                return await work()
            finally:
                await self.aclose()

        with _gc_frozen():
            return asyncio.run(main())


@contextmanager
def _gc_frozen() -> Iterator[None]:
    """Exempt the objects that exist before a run (imported libraries, the run's plan) from the
    cyclic garbage collector while it runs: a run allocates fast enough to trigger full collections,
    each of which would otherwise rescan that whole heap (~15% of a 1,000-trajectory judge run's CPU
    time, bench/judge_bench.py). Objects the run creates are collected as usual; afterwards the
    exempted ones are collectable again."""
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(20_000, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
