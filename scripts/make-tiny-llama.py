"""A tiny Llama with random weights and a small BPE tokenizer, made without any
download, for running real vLLM on a CPU (scripts/install-vllm-cpu.sh calls it).

    python make-tiny-llama.py OUT_DIR

Deterministic: a fixed corpus, a fixed seed. Its text is gibberish; what matters
is that vLLM runs it with a real scheduler, KV cache and batching. Sizes: hidden
256, 2 layers, 4 heads of dimension 64 (head dimension 16 crashes vLLM's CPU
attention), vocabulary 2048, context 4096.
"""

import random
import sys

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SEED = 1234
VOCAB = 2048
CONTEXT = 4096

# A chat template so that /v1/chat/completions works: role, content, newline.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}</s>\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def corpus(seed: int, lines: int = 4000):
    """Pseudo-words from a seeded generator: enough for BPE merges to form."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "pe", "da", "qu", "ex"]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(3000)]
    for _ in range(lines):
        yield " ".join(rng.choice(words) for _ in range(rng.randint(5, 30))) + "."


def tokenizer(out: str) -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<unk>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(SEED), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        pad_token="</s>",
        model_max_length=CONTEXT,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out)
    return fast


def model(out: str, tok: PreTrainedTokenizerFast) -> None:
    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        head_dim=64,
        max_position_embeddings=CONTEXT,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    net = LlamaForCausalLM(config).to(torch.bfloat16)
    net.save_pretrained(out, safe_serialization=True)


def main() -> None:
    out = sys.argv[1]
    tok = tokenizer(out)
    model(out, tok)
    print(f"tiny llama: vocab {len(tok)}, saved in {out}")


if __name__ == "__main__":
    main()
