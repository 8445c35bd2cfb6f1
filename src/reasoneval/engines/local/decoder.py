"""The worker process's decoder: up to `parallel` sequences decoded together in one llama.cpp context, with
exact prompt-prefix reuse and a start-up self-test (the worker entry is worker.py)."""

from __future__ import annotations

import ctypes
import time
import zlib
from collections import deque
from typing import Any

from reasoneval.engines.local.messages import WorkerConfig
from reasoneval.engines.local.model import model_params_with_repack
from reasoneval.engines.local.threads import ThreadTuner


def _load_llama(config: WorkerConfig) -> Any:
    """A `llama_cpp.Llama` with our model and context parameters.

    `Llama()` has no argument for `use_extra_bufts` (repacked weights), `n_seq_max` or `kv_unified`,
    so its calls to the default-parameter functions are wrapped for the duration of the load.
    """
    import llama_cpp
    from llama_cpp import llama_cpp as C

    model_defaults, context_defaults = C.llama_model_default_params, C.llama_context_default_params
    model_params = model_params_with_repack(model_defaults, config.cpu_repack)

    def context_params() -> Any:
        p = context_defaults()
        if config.parallel > 1:
            p.n_seq_max = config.parallel
            # One KV stream per sequence: attention reads only that sequence's cells (a shared
            # cache of all sequences measured slower).
            if hasattr(p, "kv_unified"):
                p.kv_unified = False
        return p

    C.llama_model_default_params, C.llama_context_default_params = model_params, context_params
    try:
        return llama_cpp.Llama(
            model_path=config.model_path,
            # Without a unified KV cache, llama.cpp gives each of the n_seq_max sequences n_ctx / n_seq_max.
            n_ctx=config.n_ctx * config.parallel,
            n_batch=config.n_batch,
            n_threads=config.n_threads,
            n_threads_batch=config.n_threads,
            verbose=False,
        )
    finally:
        C.llama_model_default_params, C.llama_context_default_params = model_defaults, context_defaults


class _Captured(Exception):
    """Raised by _PromptOnly.create_completion: carries what the chat handler would generate from."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.kwargs = kwargs


class _PromptOnly:
    """Stands in for the Llama object in llama-cpp-python's chat handler, to get the exact prompt
    tokens, stop strings and stopping criteria `create_chat_completion` would use, without generating."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    def create_completion(self, **kwargs: Any) -> Any:
        raise _Captured(kwargs)


class _Seq:
    """One request being generated in a worker: its KV sequence (slot), sampler and text so far."""

    __slots__ = ("job_id", "slot", "prompt", "feed", "n_past", "sampler", "completion", "text", "checked",
                 "multibyte_fix", "stops", "criteria", "max_tokens", "is_request", "leader", "followers")

    def __init__(self, job_id: Any, prompt: list[int], sampler: Any, stops: list[bytes], criteria: Any,
                 max_tokens: int, completion: list[int], is_request: bool) -> None:
        self.job_id = job_id
        self.slot = -1
        self.prompt = prompt
        self.feed = list(prompt)  # tokens to evaluate next
        self.n_past = 0
        self.sampler = sampler
        self.completion = completion
        self.text = b""
        self.checked = 0
        self.multibyte_fix = 0
        self.stops = stops
        self.criteria = criteria
        self.max_tokens = max_tokens
        self.is_request = is_request
        # Same prompt as a sequence still evaluating it: this one waits for that evaluation, then
        # takes a copy of its cells and samples from its last logits row (reuse_prefix).
        self.leader: _Seq | None = None
        self.followers: list[_Seq] = []


class Decoder:
    """Decodes up to `parallel` sequences together, each in its own KV sequence with its own sampler.

    Every step builds one llama_batch: the next token of each sequence that is generating, plus as
    much of the waiting prompts as fits in n_batch (prompt chunks end with a logits request, as in
    `Llama.eval`), then one llama_decode, then each sequence samples its token from its own row of
    logits with its own seeded sampler chain (the chain `Llama` builds for `create_completion`).
    Stop strings, EOG tokens, max_tokens, the UTF-8 hold-back and usage counts follow
    `Llama._create_completion`, but the text grows by one cached token piece per step instead of
    being detokenized from scratch.
    """

    def __init__(self, config: WorkerConfig) -> None:
        import numpy as np
        from llama_cpp import llama_cpp as C

        self.C = C
        self.config = config
        self._last = np.zeros(1, dtype=np.intc)
        self._no_logits = np.zeros(0, dtype=np.single)
        self.llm = _load_llama(config)
        self.ctx = self.llm.ctx
        self.mem = C.llama_get_memory(self.ctx)
        self.vocab = C.llama_model_get_vocab(self.llm.model)
        self.n_vocab = int(self.llm.n_vocab())
        self.n_ctx = config.n_ctx
        self.n_batch = config.n_batch
        self.batch = C.llama_batch_init(self.n_batch, 0, 1)
        self.free_slots = list(range(config.parallel))
        # The prompt tokens whose KV cells each slot holds and may lend (positions 0.. in order). A
        # finished sequence's cells stay, so with reuse_prefix the next request in that slot evaluates
        # only what its prompt does not share with them (the chat template, a few-shot preamble, the
        # same problem's earlier sample). Generated tokens' cells are never lent: decoding computes
        # them one row per sequence, unlike prompt evaluation (exact_reuse).
        self.slot_tokens: list[list[int]] = [[] for _ in range(config.parallel)]
        self.reused_tokens = 0
        self.copied_streams = 0  # prefixes copied from a busy slot
        self.followed = 0  # requests that took a concurrent same prompt's cells and logits row
        self.reuse = config.reuse_prefix  # turned off by the self-test where reuse would not be exact
        # Test hook: when a list, every sampling step appends (job_id, crc32 of its logits row).
        self.logits_trace: list[tuple[Any, int]] | None = None
        self.active: dict[int, _Seq] = {}
        self.waiting: deque[_Seq] = deque()
        self._pieces: dict[int, bytes] = {}
        self._buf = ctypes.create_string_buffer(256)
        self.decodes = 0
        self.request_decodes = 0
        # The thread count of each decode, measured and chosen (threads.py); None: always config.n_threads.
        self.tuner = ThreadTuner(config.n_threads) if config.adapt_threads and config.n_threads > 1 else None
        self.threads = config.n_threads
        handler = (self.llm.chat_handler or self.llm._chat_handlers.get(self.llm.chat_format))
        if handler is None:
            from llama_cpp import llama_chat_format

            handler = llama_chat_format.get_chat_completion_handler(self.llm.chat_format)
        self.chat_handler = handler

    # -- requests ----------------------------------------------------------------------------

    def _sampler(self, p: dict[str, Any], seed: int) -> Any:
        """The chain `Llama._init_sampler` builds for these parameters (mirostat off, no grammar)."""
        C = self.C
        chain = C.llama_sampler_chain_init(C.llama_sampler_chain_default_params())
        # p: engines.sampling.llama_fields, the set options and extra_body's keys by name (an unset one is absent).
        # Same arguments as llama-cpp-python's LlamaSampler.add_penalties (last_n_tokens_size = 64).
        C.llama_sampler_chain_add(chain, C.llama_sampler_init_penalties(
            self.n_vocab, 64, float(p.get("repetition_penalty", 1.0)),
            float(p.get("frequency_penalty", 0.0)), float(p.get("presence_penalty", 0.0))))
        temp = float(p["temperature"])
        if temp < 0.0:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_dist(seed))
        elif temp == 0.0:
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_greedy())
        else:
            # OpenAI semantics: unset means "off", not llama.cpp's defaults (top_k=40, min_p=0.05).
            top_k = int(p.get("top_k") or 0)
            min_p = float(p.get("min_p") or 0.0)
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_k(top_k))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_typical(1.0, 1))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_top_p(float(p["top_p"]), 1))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_min_p(min_p, 1))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_temp(temp))
            C.llama_sampler_chain_add(chain, C.llama_sampler_init_dist(seed))
        return chain

    def _prompt(self, job: dict[str, Any]) -> tuple[list[int], list[str], Any]:
        """(prompt tokens, stop strings, stopping criteria) exactly as llama-cpp-python builds them."""
        llm = self.llm
        user_stop = list(job["params"].get("stop", ()))
        if job["messages"] is not None:
            try:
                self.chat_handler(llama=_PromptOnly(llm), messages=[dict(m) for m in job["messages"]],
                                  stop=user_stop, max_tokens=int(job["params"]["max_tokens"]))
            except _Captured as c:
                stop = c.kwargs.get("stop") or []
                return list(c.kwargs["prompt"]), [stop] if isinstance(stop, str) else list(stop), \
                    c.kwargs.get("stopping_criteria")
            raise RuntimeError("the chat handler did not call create_completion")
        prompt: str = job["prompt"]
        # Llama._create_completion for a text prompt (no suffix, no infill).
        bos = llm.token_bos()
        cls_id, sep_id = llm._model.token_cls(), llm._model.token_sep()
        bos_tokens = [cls_id if cls_id != -1 else bos]
        eos_tokens = [sep_id if sep_id != -1 else llm.token_eos()]
        if not llm._model.add_bos_token() or bos_tokens[:1] == [-1]:
            bos_tokens = []
        if not llm._model.add_eos_token() and sep_id == -1:
            eos_tokens = []
        body = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True) if prompt != "" else []
        return bos_tokens + body + eos_tokens, user_stop, None

    def add(self, job_id: Any, job: dict[str, Any], is_request: bool = True) -> tuple[Any, str, Any] | None:
        """Queue a request; returns an error reply at once when it cannot run."""
        p = job["params"]
        prompt, stop, criteria = self._prompt(job)
        if len(prompt) >= self.n_ctx:
            return (job_id, "error", f"ValueError: Requested tokens ({len(prompt)}) exceed context window of "
                                     f"{self.n_ctx}")
        max_tokens = int(p["max_tokens"])
        if max_tokens <= 0:
            max_tokens = self.n_ctx - len(prompt)
        if max_tokens + len(prompt) >= self.n_ctx:
            max_tokens = self.n_ctx - len(prompt)
        if not prompt:  # nothing to condition on: start from BOS
            prompt = [self.llm.token_bos()]
        seq = _Seq(job_id, prompt, self._sampler(p, int(job["seed"])), [s.encode("utf-8") for s in stop],
                   criteria, max_tokens, [], is_request)
        self.waiting.append(seq)
        self._admit()
        return None

    def _admit(self) -> None:
        while self.waiting and self.free_slots:
            seq = self.waiting.popleft()
            slot, source, shared = self.free_slots[0], -1, 0
            if self.reuse:
                leader = next((s for s in self.active.values() if s.leader is None and s.n_past < len(s.prompt)
                               and s.prompt == seq.prompt), None)
                if leader is not None:  # the same prompt is being evaluated: wait for its cells
                    self._occupy(seq, slot, 0)
                    seq.leader = leader
                    leader.followers.append(seq)
                    continue
                # The slot holding the longest prefix of this prompt: a free one (its last sequence's
                # prompt cells) or a busy one (then its cells are copied into a free slot); at least
                # the prompt's last token is evaluated again, for its logits.
                for s in self.free_slots + [s for s in self.active if self.active[s].leader is None]:
                    n = _common_prefix(self.slot_tokens[s], seq.prompt, len(seq.prompt) - 1)
                    if n > shared:
                        source, shared = s, n
                shared = exact_reuse(shared, len(seq.prompt), self.n_batch)
                if source in self.free_slots:
                    slot = source
                elif shared:  # llama.cpp copies the whole KV stream, at the next llama_decode
                    self.C.llama_memory_seq_rm(self.mem, slot, -1, -1)
                    self.C.llama_memory_seq_cp(self.mem, source, slot, -1, -1)
                    self.slot_tokens[slot] = self.slot_tokens[source][:shared]
                    self.copied_streams += 1
            self._occupy(seq, slot, shared)

    def _occupy(self, seq: _Seq, slot: int, shared: int) -> None:
        """Put seq into the free slot, keeping the slot's first `shared` cells."""
        self.free_slots.remove(slot)
        seq.slot = slot
        self.C.llama_memory_seq_rm(self.mem, slot, shared, -1)
        del self.slot_tokens[slot][shared:]
        seq.feed = seq.prompt[shared:]
        seq.n_past = shared
        self.reused_tokens += shared
        self.active[slot] = seq

    def cancel(self, job_id: Any) -> None:
        for seq in list(self.waiting):
            if seq.job_id == job_id:
                self.waiting.remove(seq)
                self.C.llama_sampler_free(seq.sampler)
        for seq in list(self.active.values()):
            if seq.job_id == job_id:
                self._release(seq)

    def _release(self, seq: _Seq, keep_cells: bool = True) -> None:
        if seq.leader is not None:  # a follower cancelled before its leader's prompt was done
            seq.leader.followers.remove(seq)
        elif seq.followers and seq.n_past < len(seq.prompt):
            # A leader cancelled mid-prompt: its first follower evaluates the prompt, the rest follow it.
            heir, *rest = seq.followers
            heir.leader, heir.followers = None, rest
            for f in rest:
                f.leader = heir
        if not keep_cells:
            self.C.llama_memory_seq_rm(self.mem, seq.slot, -1, -1)
            self.slot_tokens[seq.slot].clear()
        self.C.llama_sampler_free(seq.sampler)
        del self.active[seq.slot]
        self.free_slots.append(seq.slot)
        self.free_slots.sort()
        self._admit()

    def busy(self) -> bool:
        return bool(self.active)

    # -- decoding ----------------------------------------------------------------------------

    def _piece(self, token: int) -> bytes:
        piece = self._pieces.get(token)
        if piece is None:
            n = self.C.llama_token_to_piece(self.vocab, token, self._buf, len(self._buf), 0, False)
            if n < 0:  # longer than the buffer
                self._buf = ctypes.create_string_buffer(-n)
                n = self.C.llama_token_to_piece(self.vocab, token, self._buf, len(self._buf), 0, False)
            piece = self._buf.raw[:n]
            self._pieces[token] = piece
        return piece

    def step(self) -> list[tuple[Any, str, Any]]:
        """One llama_decode; returns the replies of the sequences that finished.

        A prompt is evaluated alone, in chunks of n_batch, exactly as `Llama.eval` does; otherwise the
        next token of every generating sequence goes into one batch. Mixing prompts of different
        lengths into one batch makes llama.cpp split it into sub-batches that evaluate a prompt in
        pieces, which changes its float bits (and, through the 8-bit activations, often the sample);
        one-token rows are computed independently of their batch-mates, so a sample comes out the
        same whatever it was batched with.
        """
        C, batch = self.C, self.batch
        tok, pos, nsid, sid, lg = batch.token, batch.pos, batch.n_seq_id, batch.seq_id, batch.logits
        n = 0
        sample_at: list[tuple[_Seq, int]] = []
        generating: list[_Seq] = []
        prompt_done: _Seq | None = None
        seqs = [self.active[k] for k in sorted(self.active)]
        prefill = next((seq for seq in seqs if seq.n_past < len(seq.prompt) and seq.leader is None), None)
        if prefill is not None:
            seq = prefill
            start = seq.n_past
            # Chunks end where `Llama.eval`'s would (multiples of n_batch), also after a reused prefix.
            take = min(len(seq.feed), self.n_batch - start % self.n_batch)
            for i in range(take):
                tok[n], pos[n], nsid[n], sid[n][0], lg[n] = seq.feed[i], start + i, 1, seq.slot, 0
                n += 1
            lg[n - 1] = 1
            if take == len(seq.feed):
                sample_at.append((seq, n - 1))
                prompt_done = seq
            if take > 1:  # a one-row chunk's cells are computed differently: never reused (exact_reuse)
                self.slot_tokens[seq.slot].extend(seq.feed[:take])
            seq.feed = seq.feed[take:]
            seq.n_past = start + take
        else:
            for seq in seqs:
                if seq.leader is not None:
                    continue
                tok[n], pos[n], nsid[n], sid[n][0], lg[n] = seq.feed[0], seq.n_past, 1, seq.slot, 1
                sample_at.append((seq, n))
                generating.append(seq)
                n += 1
        batch.n_tokens = n
        tuner = self.tuner
        if tuner is not None:
            # Generation steps are measured (the same kind of step, comparable); prompt chunks use the choice.
            threads = tuner.next_threads() if generating else tuner.choice
            if threads != self.threads:
                C.llama_set_n_threads(self.ctx, threads, threads)
                self.threads = threads
            t0 = time.perf_counter()
        rc = C.llama_decode(self.ctx, batch)
        if tuner is not None and generating:
            tuner.record(threads, n, time.perf_counter() - t0)
        self.decodes += 1
        if rc != 0:
            replies = [(s.job_id, "error", f"RuntimeError: llama_decode returned {rc}") for s in seqs]
            for s in seqs:
                self._release(s, keep_cells=False)
            return replies
        for seq in generating:
            seq.n_past += 1
        if prompt_done is not None:
            leader, row = prompt_done, sample_at[0][1]
            for follower in leader.followers:  # its prompt is the leader's: copy the cells, share the row
                # (llama.cpp copies the whole KV stream at the next llama_decode, before computing)
                self.C.llama_memory_seq_cp(self.mem, leader.slot, follower.slot, -1, -1)
                self.slot_tokens[follower.slot] = list(self.slot_tokens[leader.slot])
                follower.leader, follower.feed, follower.n_past = None, [], len(leader.prompt)
                self.reused_tokens += len(leader.prompt)
                self.followed += 1
                sample_at.append((follower, row))
            leader.followers = []
        replies = []
        for seq, idx in sample_at:
            reply = self._advance(seq, idx)
            if reply is not None:
                replies.append(reply)
                self._release(seq)
        return replies

    def _advance(self, seq: _Seq, idx: int) -> tuple[Any, str, Any] | None:
        """Sample the next token of seq from batch row idx and apply the stop rules."""
        C = self.C
        if self.logits_trace is not None:
            row = ctypes.string_at(C.llama_get_logits_ith(self.ctx, idx), 4 * self.n_vocab)
            self.logits_trace.append((seq.job_id, zlib.crc32(row)))
        token = C.llama_sampler_sample(seq.sampler, self.ctx, idx)
        if seq.criteria is not None:
            # llama-cpp-python's chat criteria look at the last evaluated token (the previous one).
            self._last[0] = seq.feed[-1] if seq.feed else seq.prompt[-1]
            if seq.criteria(self._last, self._no_logits):
                return self._finish(seq, seq.text, "stop")
        if C.llama_vocab_is_eog(self.vocab, token):
            return self._finish(seq, seq.text, "stop")
        seq.completion.append(token)
        seq.text += self._piece(token)
        seq.feed = [token]
        text = seq.text
        # Hold back an incomplete UTF-8 character (as Llama._create_completion does, quirks included).
        for k, char in enumerate(text[-3:]):
            k = 3 - k
            for num, pattern in ((2, 192), (3, 224), (4, 240)):
                if num > k and pattern & char == pattern:
                    seq.multibyte_fix = num - k
        if seq.multibyte_fix > 0:
            seq.multibyte_fix -= 1
            if seq.n_past < self.n_ctx:
                return None
            return self._finish(seq, text, "length")
        found = None
        for s in seq.stops:
            if text.find(s, max(0, seq.checked - len(s) + 1)) >= 0:
                found = s
                break
        seq.checked = len(text)
        if found is not None:
            return self._finish(seq, text[:text.index(found)], "stop")
        if len(seq.completion) >= seq.max_tokens or seq.n_past >= self.n_ctx:
            return self._finish(seq, text, "length")
        return None

    def _finish(self, seq: _Seq, text: bytes, reason: str) -> tuple[Any, str, Any]:
        return (seq.job_id, "ok", {
            "text": text.decode("utf-8", errors="ignore"),
            "finish_reason": reason,
            "prompt_tokens": len(seq.prompt),
            "completion_tokens": len(seq.completion),
        })

    def self_test(self) -> None:
        """A short greedy generation: one sequence alone, then `parallel` together, so the kernels
        of both shapes (one row, a batch of rows) run once before the worker says it is ready; then,
        with reuse_prefix, the check that prefix reuse is exact on this machine."""
        params: dict[str, Any] = {"temperature": 0.0, "top_p": 1.0, "max_tokens": 2}
        jobs = [{"params": params, "seed": 0, "messages": None, "prompt": "Hello"}]
        jobs += [{"params": params, "seed": i, "messages": None, "prompt": "Hi"}
                 for i in range(1, self.config.parallel)]
        for i, job in enumerate(jobs):
            self.add(("self-test", i), job, is_request=False)
            if i == 0:
                while self.busy():
                    self.step()
        while self.busy():
            self.step()
        if self.reuse and not self._split_prompts_are_exact():
            self.reuse = False
        self.C.llama_memory_clear(self.mem, True)
        for tokens in self.slot_tokens:
            tokens.clear()
        self.reused_tokens = 0

    def _split_prompts_are_exact(self) -> bool:
        """Whether a prompt evaluated in other multi-row chunks than `Llama.eval`'s gives bitwise the
        same logits in every row: what exact prefix reuse rests on (exact_reuse). True on the CPU
        measured (AVX-512, no AMX); checked on each machine, since other kernels (AMX, AVX2, ARM) may
        tile multi-row products differently."""
        C, batch = self.C, self.batch
        text = b"The quick brown fox jumps over the lazy dog; then it counts: one, two, three, four, five, six."
        tokens = self.llm.tokenize(text, add_bos=False, special=False)[:40]
        if len(tokens) % self.n_batch == 1:  # Llama.eval's last chunk would be one row
            tokens.pop()

        def evaluate(chunks: list[int]) -> list[int]:
            C.llama_memory_seq_rm(self.mem, 0, -1, -1)
            rows, pos = [], 0
            for size in chunks:
                for i in range(size):
                    batch.token[i], batch.pos[i], batch.n_seq_id[i] = tokens[pos + i], pos + i, 1
                    batch.seq_id[i][0], batch.logits[i] = 0, 1
                batch.n_tokens = size
                if C.llama_decode(self.ctx, batch) != 0:
                    return []
                rows += [zlib.crc32(ctypes.string_at(C.llama_get_logits_ith(self.ctx, i), 4 * self.n_vocab))
                         for i in range(size)]
                pos += size
            return rows

        n, step = len(tokens), self.n_batch
        whole = evaluate([min(step, n - i) for i in range(0, n, step)])
        split: list[int] = []
        while sum(split) < n:  # chunks of 3, 2, 5 rows (the last one at least 2)
            split.append(min((3, 2, 5)[len(split) % 3], n - sum(split)))
        if split[-1] == 1:
            split[-2:] = [split[-2] + 1]
        exact = bool(whole) and whole == evaluate(split)
        C.llama_memory_seq_rm(self.mem, 0, -1, -1)
        return exact


def exact_reuse(shared: int, n_prompt: int, n_batch: int) -> int:
    """How many of `shared` cached prompt cells a prompt of n_prompt tokens may keep so that its
    samples stay bitwise those of evaluating the whole prompt (`Llama.eval`'s chunks of n_batch).

    llama.cpp computes a one-row ubatch differently from a multi-row one (measured: about one
    position in five gets other float bits; as we read ggml, a one-token query is a contiguous
    tensor, so attention's Q·K product takes another matrix kernel), and the F16 cache and 8-bit
    activations can turn that into another sample. Between multi-row ubatches the split does not
    matter (tests/engines/test_local.py compares every logits row; the worker's self-test checks
    it on each machine). So a reused prefix must not leave the rest of its n_batch chunk as a
    single row: then one more cell is evaluated again. Only cells evaluated in multi-row prompt
    chunks are ever offered for reuse (`step`), so every reused cell holds what whole-prompt
    evaluation would have put there.
    """
    end = min(n_prompt, (shared // n_batch + 1) * n_batch)
    if shared % n_batch and end - shared == 1:
        return shared - 1
    return shared


def _common_prefix(a: list[int], b: list[int], limit: int) -> int:
    n = min(len(a), len(b), limit)
    for i in range(n):
        if a[i] != b[i]:
            return i
    return max(n, 0)
