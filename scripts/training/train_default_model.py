"""Trains the project's default bert-mini-shaped masked LM on the corpus from build_corpus.py.

  python3 -m scripts.training.train_default_model --run NAME --minutes M [--resume] [--device cuda]
  python3 -m scripts.training.train_default_model --profile 5   # profile a few steps and exit

Recipe: sequences of up to 128 tokens ([CLS] sentences... [SEP]) packed from consecutive sentences
of one document; 15% of the non-special tokens are chosen, of those 80% become [MASK], 10% a random
token and 10% stay; loss only at the chosen positions; AdamW (betas 0.9/0.98, weight decay 0.01
except biases and LayerNorm), fixed seed.

Schedule (default): the run is bounded by wall-clock time, so the learning rate is a function of the
fraction of the time budget spent training (t = training seconds / budget): linear warm-up over
the first --warmup fraction, then linear decay to zero at t = 1, where training stops. Time spent
on checkpoints does not count. This always ends with a fully decayed learning rate whatever the
step time turns out to be (the machine is shared, so it varies); the lr of every step is logged,
so the schedule that happened is on record. --schedule-steps N makes the same schedule a
function of the step count instead (bit-for-bit reproducible, used by the tests).
"""
import argparse
import calendar
import hashlib
import json
import math
import os
import subprocess
import sys
import time

# The two cores are shared with other jobs. OpenMP threads that spin while waiting for a
# descheduled partner made a step about 2x slower under load (measured: 1063 vs 2011 tokens/s);
# passive waiting must be chosen before torch starts its OpenMP runtime.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from scripts.reference.bert_torch import (BertForMaskedLM, load_hf_folder,  # noqa: E402
                                          save_hf_folder)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAD, CLS, SEP, MASK = 0, 101, 102, 103
FIRST_ORDINARY_ID = 999  # ids below are [PAD], [unusedN], [UNK], [CLS], [SEP], [MASK]


def pack_sequences(sentence_offsets, document_offsets, max_tokens):
    """Spans (start, end) into the id array, each the consecutive sentences of one document that
    fit in max_tokens - 2 (room for [CLS] and [SEP]); a longer sentence is cut into pieces."""
    body = max_tokens - 2
    spans = []
    for d in range(len(document_offsets) - 1):
        first, last = document_offsets[d], document_offsets[d + 1]
        start = sentence_offsets[first]
        for s in range(first, last):
            s_start, s_end = sentence_offsets[s], sentence_offsets[s + 1]
            if s_end - start > body and s_start > start:
                spans.append((start, s_start))
                start = s_start
            while s_end - start > body:
                spans.append((start, start + body))
                start += body
        if sentence_offsets[last] > start:
            spans.append((start, sentence_offsets[last]))
    return np.asarray(spans, dtype=np.int64)  # (S, 2)


def make_batch(ids, spans):
    """Token ids (B, n) with [CLS]/[SEP] and padding, and the attention mask (B, n)."""
    n = int((spans[:, 1] - spans[:, 0]).max()) + 2
    input_ids = np.zeros((len(spans), n), dtype=np.int64)
    attention_mask = np.zeros((len(spans), n), dtype=np.int64)
    for i, (a, b) in enumerate(spans):
        length = b - a
        input_ids[i, 0] = CLS
        input_ids[i, 1:1 + length] = ids[a:b]
        input_ids[i, 1 + length] = SEP
        attention_mask[i, :length + 2] = 1
    return torch.from_numpy(input_ids), torch.from_numpy(attention_mask)


def mask_tokens(input_ids, generator, vocab_size, probability=0.15):
    """BERT's masking: returns (corrupted ids, bool mask of chosen positions, original ids)."""
    ordinary = input_ids >= FIRST_ORDINARY_ID  # (B, n): never [CLS], [SEP], [PAD]
    chosen = (torch.rand(input_ids.shape, generator=generator) < probability) & ordinary
    roll = torch.rand(input_ids.shape, generator=generator)
    corrupted = input_ids.clone()
    corrupted[chosen & (roll < 0.8)] = MASK
    random_tokens = torch.randint(FIRST_ORDINARY_ID, vocab_size, input_ids.shape,
                                  generator=generator)
    replace = chosen & (roll >= 0.8) & (roll < 0.9)
    corrupted[replace] = random_tokens[replace]
    return corrupted, chosen, input_ids


def learning_rate(progress, peak, warmup):
    if progress < warmup:
        return peak * progress / warmup
    return peak * max(0.0, (1.0 - progress) / (1.0 - warmup))


def make_optimizer(model, lr):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim == 1 else decay).append(p)  # biases and LayerNorm weights
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.98), eps=1e-6)


def git_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def file_sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Trainer:
    def __init__(self, args):
        self.args = args
        corpus = args.corpus
        self.ids = np.load(os.path.join(corpus, "train_ids.npy")).astype(np.int64)
        self.spans = pack_sequences(np.load(os.path.join(corpus, "train_sentences.npy")),
                                    np.load(os.path.join(corpus, "train_documents.npy")),
                                    args.seq_len)
        self.device = torch.device(args.device)
        torch.manual_seed(args.seed)
        self.model = BertForMaskedLM(json.loads(args.model_config)).to(self.device)
        self.optimizer = make_optimizer(self.model, args.lr)
        self.step = 0
        self.epoch = 0
        self.position = 0  # index into this epoch's order of sequences
        self.train_seconds = 0.0
        self.tokens_seen = 0
        self.last_loss = float("nan")
        self.order = self.epoch_order()

    def epoch_order(self):
        return np.random.default_rng([self.args.seed, self.epoch]).permutation(len(self.spans))

    def next_spans(self):
        b = self.args.batch_size
        if self.position + b > len(self.order):
            self.epoch += 1
            self.position = 0
            self.order = self.epoch_order()
        chosen = self.spans[self.order[self.position:self.position + b]]
        self.position += b
        return chosen

    def train_step(self, lr):
        input_ids, attention_mask = make_batch(self.ids, self.next_spans())
        generator = torch.Generator().manual_seed(self.args.seed * 1_000_003 + self.step)
        corrupted, chosen, labels = mask_tokens(input_ids, generator,
                                                self.model.config["vocab_size"])
        torch.manual_seed(self.args.seed + self.step)  # dropout, reproducible across resumes
        corrupted, attention_mask, chosen, labels = (t.to(self.device) for t in
                                                     (corrupted, attention_mask, chosen, labels))
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.args.bf16):
            logits = self.model(corrupted, attention_mask, masked_positions=chosen)  # (M, V)
        targets = labels[chosen]  # (M,)
        loss = F.cross_entropy(logits.float(), targets)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        # The arg max over the vocabulary costs about 5% of a step; every 4th step is enough
        # for the logged accuracy.
        accuracy = None
        if self.step % 4 == 0:
            accuracy = (logits.detach().argmax(-1) == targets).float().mean().item()
        return loss.item(), accuracy, int(attention_mask.sum().item())

    def state(self):
        return {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "step": self.step, "epoch": self.epoch, "position": self.position,
                "train_seconds": self.train_seconds, "tokens_seen": self.tokens_seen,
                "last_loss": self.last_loss, "args": vars(self.args)}

    def load(self, state):
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        for key in ("step", "epoch", "position", "train_seconds", "tokens_seen", "last_loss"):
            setattr(self, key, state[key])
        self.order = self.epoch_order()


def checkpoint(trainer, run_dir):
    path = os.path.join(run_dir, "checkpoint.pt")
    torch.save(trainer.state(), path + ".tmp")
    os.replace(path + ".tmp", path)  # a crash mid-write never leaves a broken checkpoint


def write_final(trainer, run_dir, args, started):
    final = os.path.join(run_dir, "final")
    save_hf_folder(trainer.model.cpu(), final, args.vocab)
    manifest = os.path.join(args.corpus, "manifest.json")
    info = {"name": args.model_name, "steps": trainer.step, "tokens_seen": trainer.tokens_seen,
            "epochs": trainer.epoch + trainer.position / len(trainer.order),
            "train_seconds": round(trainer.train_seconds, 1),
            "wall_seconds_this_session": round(time.time() - started, 1),
            "final_loss": trainer.last_loss, "seed": args.seed, "batch_size": args.batch_size,
            "seq_len": args.seq_len, "peak_lr": args.lr, "warmup_fraction": args.warmup,
            "budget_minutes": args.minutes, "device": args.device,
            "torch_version": torch.__version__, "corpus_manifest_sha256": file_sha256(manifest),
            "corpus_train_tokens": int(len(trainer.ids)), "train_sequences": int(len(trainer.spans)),
            "git_commit": git_commit()}
    if args.init_from:
        # The run continued earlier weights: keep that run's record so the provenance chains
        # (steps, tokens and minutes above count this run only).
        earlier = os.path.join(args.init_from, "training.json")
        info["initialised_from"] = (json.load(open(earlier, encoding="utf-8"))
                                    if os.path.exists(earlier) else args.init_from)
    with open(os.path.join(final, "training.json"), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)
        f.write("\n")
    return final


def profile(args):
    from torch.profiler import ProfilerActivity, profile as torch_profile
    trainer = Trainer(args)
    for _ in range(3):  # warm-up steps, not profiled
        trainer.train_step(args.lr)
        trainer.step += 1
    times = []
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.profile):
            t0 = time.time()
            _, _, tokens = trainer.train_step(args.lr)
            times.append((time.time() - t0, tokens))
            trainer.step += 1
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
    seconds = sum(t for t, _ in times)
    print(f"batch {args.batch_size} x {args.seq_len}: {seconds / len(times):.3f} s/step, "
          f"{sum(n for _, n in times) / seconds:.0f} tokens/s (under the profiler)")


def export_checkpoint(args):
    """Writes the run's latest checkpoint as a Hugging Face folder (for evaluating a run that is
    still going, or one that was stopped)."""
    state = torch.load(os.path.join(args.runs, args.run, "checkpoint.pt"), map_location="cpu")
    model = BertForMaskedLM(json.loads(state["args"].get("model_config", "{}")))
    model.load_state_dict(state["model"])
    save_hf_folder(model, args.export, args.vocab)
    print(f"wrote {args.export} from step {state['step']} "
          f"({state['train_seconds'] / 60:.1f} training minutes)")


def train(args):
    run_dir = os.path.join(args.runs, args.run)
    os.makedirs(run_dir, exist_ok=True)
    started = time.time()
    trainer = Trainer(args)
    ckpt = os.path.join(run_dir, "checkpoint.pt")
    if args.resume and os.path.exists(ckpt):
        trainer.load(torch.load(ckpt, map_location=args.device))
    elif args.resume:
        raise SystemExit(f"train: --resume given but {ckpt} does not exist")
    elif args.init_from:
        # Continue from weights alone (a later session on a machine without this run's
        # checkpoint): the optimizer starts afresh, with its own warm-up.
        trainer.model.load_state_dict(load_hf_folder(args.init_from).state_dict())
    budget = args.minutes * 60.0
    end_by = None
    if args.end_by:  # a wall-clock safety stop, e.g. 07:53 (UTC, today)
        hours, minutes = (int(v) for v in args.end_by.split(":"))
        now = time.gmtime()
        end_by = calendar.timegm((now.tm_year, now.tm_mon, now.tm_mday, hours, minutes, 0))
    log = open(os.path.join(run_dir, "log.txt"), "a", encoding="utf-8")
    if trainer.step == 0:
        log.write(f"# {json.dumps(vars(args))}\n# train sequences {len(trainer.spans)}, "
                  f"tokens {len(trainer.ids)}\n# step loss masked_acc tokens_per_s lr "
                  f"train_minutes epoch\n")
    log.write(f"# session started {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} "
              f"at step {trainer.step}\n")
    log.flush()
    last_checkpoint = time.time()
    window_loss, window_acc, window_tokens, window_seconds, window_steps = 0.0, 0.0, 0, 0.0, 0
    window_acc_steps = 0
    while trainer.train_seconds < budget:
        if args.schedule_steps:
            progress = trainer.step / args.schedule_steps
        else:
            progress = trainer.train_seconds / budget
        if progress >= 1.0:
            break
        lr = learning_rate(progress, args.lr, args.warmup)
        t0 = time.time()
        loss, acc, tokens = trainer.train_step(lr)
        dt = time.time() - t0
        trainer.step += 1
        trainer.train_seconds += dt
        trainer.tokens_seen += tokens
        trainer.last_loss = loss
        window_loss += loss
        if acc is not None:
            window_acc += acc
            window_acc_steps += 1
        window_tokens += tokens
        window_seconds += dt
        window_steps += 1
        if not math.isfinite(loss):
            raise SystemExit(f"train: loss is {loss} at step {trainer.step}")
        if trainer.step % args.log_every == 0:
            log.write(f"{trainer.step} {window_loss / window_steps:.4f} "
                      f"{window_acc / max(window_acc_steps, 1):.4f} "
                      f"{window_tokens / window_seconds:.0f} "
                      f"{lr:.3e} {trainer.train_seconds / 60:.2f} "
                      f"{trainer.epoch + trainer.position / len(trainer.order):.3f}\n")
            log.flush()
            window_loss, window_acc, window_tokens, window_seconds, window_steps = \
                0.0, 0.0, 0, 0.0, 0
            window_acc_steps = 0
        if time.time() - last_checkpoint > args.checkpoint_minutes * 60:
            checkpoint(trainer, run_dir)
            last_checkpoint = time.time()
        if args.max_steps and trainer.step >= args.max_steps:
            break
        if end_by and time.time() >= end_by:
            log.write(f"# stopped by --end-by at step {trainer.step}, before the schedule ended\n")
            break
    checkpoint(trainer, run_dir)
    final = write_final(trainer, run_dir, args, started)
    log.write(f"# finished at step {trainer.step}, {trainer.tokens_seen} tokens, "
              f"{trainer.train_seconds / 60:.1f} training minutes; wrote {final}\n")
    log.close()


def main():
    p = argparse.ArgumentParser(prog="python3 -m scripts.training.train_default_model",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", default="default")
    p.add_argument("--runs", default=os.path.join(ROOT, "train_runs"),
                   help="parent folder of the run folders")
    p.add_argument("--minutes", type=float, default=80.0, help="training time budget")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--init-from", metavar="HF_DIR", default="",
                   help="start from these weights (e.g. convert_model.py to-hf of the shipped "
                        "model) instead of a random initialisation")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--corpus", default=os.path.join(ROOT, "corpus"))
    p.add_argument("--vocab", default=os.path.join(ROOT, "model_data/vocab.txt"))
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--warmup", type=float, default=0.05, help="fraction of the budget")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--bf16", action="store_true",
                   help="bfloat16 autocast for the matrix products (weights and optimizer stay "
                        "float32); about 3x faster GEMMs on CPUs with AVX512-BF16")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--checkpoint-minutes", type=float, default=10.0)
    p.add_argument("--end-by", default="", help="HH:MM UTC: stop (and write the final folder) "
                                                "at this time even if the budget is not spent")
    p.add_argument("--schedule-steps", type=int, default=0,
                   help="schedule by step count instead of time (exactly reproducible; tests)")
    p.add_argument("--model-config", default="{}",
                   help="JSON overrides of the model config (tests use a smaller model)")
    p.add_argument("--max-steps", type=int, default=0, help="stop early (tests)")
    p.add_argument("--export", metavar="DIR",
                   help="write the run's latest checkpoint as a Hugging Face folder and exit")
    p.add_argument("--profile", type=int, default=0, help="profile this many steps and exit")
    p.add_argument("--model-name", default="attention-explainer-bert-mini-shaped (trained here; "
                                           "not prajjwal1/bert-mini)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    # Denormal floats in the output layer's gradient made a step about 10x slower
    # (docs/ARCHITECTURE.md, "Machine facts").
    torch.set_flush_denormal(True)
    if args.profile:
        profile(args)
    elif args.export:
        export_checkpoint(args)
    else:
        train(args)


if __name__ == "__main__":
    main()
