"""The one LLM layer: every LLM call in GCPC goes through `LLM.complete`.

Why one layer: synthesis and every judge need the same guarantees, and they are easy to get subtly
wrong twice. The package, one concept a module (each imports its siblings, never this `__init__`):

* `config` — where and how to call the model: any OpenAI-compatible endpoint through the real
  `openai` client (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, model from the caller or `GCPC_MODEL`),
  the `GCPC_LLM_*` knobs, and `llm_status` for the app and CLI;
* `request` — the request body of a structured call, for each structured mode, and canonical JSON;
* `negotiation` — which structured mode an endpoint and model accept (`auto` tries the strongest
  first, falls back on a rejection of the response format, and stores what works per base URL and
  model in the project DB);
* `reply` — the single validation path of a reply (`model_validate_json` from the raw body, so a bad
  reply is reported with its text and a good one cached as is);
* `errors` — `LLMCallError` for a failed call, `LLMReplyError` / `LLMRefusal` for an unusable reply
  (never cached, carrying the raw text for one repair round), and the reasons callers act on;
* `cache` — the content-addressed response cache key and the writes a caller holds back;
* `pricing` — token accounting per call and per run, with a cost estimate from `prices.yaml`;
* `transport` — the `openai` client class, its aiohttp transport and SSL context;
* `client` — `LLM` itself: cache, in-flight sharing, concurrency bound, recording of every call;
* `batch` — the OpenAI Batch API, each line exactly the body a live call would send;
* `server` — what a server tells about itself (models, context window, tokenizer) and `llm check`;
* `budget` — the context budget judges and synthesis share (`fit_prompt`, `repair_room`).

HTTP retries, backoff and timeouts are the `openai` client's own. `openai` (and its `httpx2`) are
imported only where a client is built or its errors are caught, so importing this package is cheap.
"""

from .batch import BATCH_ENDPOINT, accept_batch_reply, batch_line, batch_results, create_batch, retrieve_batch
from .budget import (
    DEFAULT_REPLY_RESERVE,
    REPAIR_TOKENS_FACTOR,
    PromptFit,
    RepairRoom,
    budget_head,
    fit_prompt,
    prompt_budget,
    repair_room,
)
from .cache import HeldWrites, request_key
from .client import LLM
from .config import (
    DEFAULT_CONCURRENCY,
    ENV_CONCURRENCY,
    ENV_MODEL,
    MODE_SETTINGS,
    STRUCTURED_MODES,
    LLMConfig,
    ModeSetting,
    InvalidSetting,
    StructuredMode,
    llm_status,
    normalized_endpoint,
)
from .errors import (
    REASON_CONTEXT_OVERFLOW,
    REASON_TIMEOUT,
    REASON_TRUNCATED,
    UNREPAIRABLE_CALL_ERRORS,
    LLMCallError,
    LLMError,
    LLMNotConfigured,
    LLMRefusal,
    LLMReplyError,
    call_error,
)
from .negotiation import UNSETTLED_MODE
from .pricing import (
    BATCH_PRICE_FACTOR,
    DEFAULT_PRICES_PATH,
    Price,
    RunTotals,
    Usage,
    estimate_cost,
    load_prices,
    price_for,
)
from .reply import LLMResult, interpret_reply
from .request import JSON_OBJECT_PROMPT, Message, chat_request_body
from .server import CheckReport, ServerInfo, check_endpoint, count_prompt_tokens, estimate_tokens, server_info

__all__ = [
    "BATCH_ENDPOINT",
    "BATCH_PRICE_FACTOR",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_PRICES_PATH",
    "DEFAULT_REPLY_RESERVE",
    "ENV_CONCURRENCY",
    "ENV_MODEL",
    "JSON_OBJECT_PROMPT",
    "LLM",
    "MODE_SETTINGS",
    "REASON_CONTEXT_OVERFLOW",
    "REASON_TIMEOUT",
    "REASON_TRUNCATED",
    "REPAIR_TOKENS_FACTOR",
    "STRUCTURED_MODES",
    "UNREPAIRABLE_CALL_ERRORS",
    "UNSETTLED_MODE",
    "CheckReport",
    "HeldWrites",
    "InvalidSetting",
    "LLMCallError",
    "LLMConfig",
    "LLMError",
    "LLMNotConfigured",
    "LLMRefusal",
    "LLMReplyError",
    "LLMResult",
    "Message",
    "ModeSetting",
    "Price",
    "PromptFit",
    "RepairRoom",
    "RunTotals",
    "ServerInfo",
    "StructuredMode",
    "Usage",
    "accept_batch_reply",
    "batch_line",
    "batch_results",
    "budget_head",
    "call_error",
    "chat_request_body",
    "check_endpoint",
    "count_prompt_tokens",
    "create_batch",
    "estimate_cost",
    "estimate_tokens",
    "fit_prompt",
    "interpret_reply",
    "llm_status",
    "load_prices",
    "normalized_endpoint",
    "price_for",
    "prompt_budget",
    "repair_room",
    "request_key",
    "retrieve_batch",
    "server_info",
]
