"""Tiny random-weight LoRA adapters for the tiny Llama (make-tiny-llama.py), made
without any download, for serving LoRA on vLLM's CPU build
(scripts/install-vllm-cpu.sh calls it).

    python make-tiny-lora.py MODEL_DIR OUT_DIR NAME [NAME ...]

Writes OUT_DIR/NAME/adapter_config.json and adapter_model.safetensors in PEFT's
layout (rank 8, alpha 16, q_proj and v_proj of every layer), with torch and
safetensors directly, so PEFT itself is not needed. Deterministic: each adapter's
weights are seeded by its name. The weights are small random numbers (lora_B is
not zero, so an adapter does change the logits); what matters is that vLLM loads
and applies a real adapter.
"""

import json
import os
import sys
import zlib

import torch
from safetensors.torch import save_file

RANK = 8
ALPHA = 16
TARGETS = ["q_proj", "v_proj"]


def adapter(model_dir: str, out: str, name: str) -> None:
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    hidden = cfg["hidden_size"]
    head_dim = cfg.get("head_dim") or hidden // cfg["num_attention_heads"]
    sizes = {
        "q_proj": (hidden, cfg["num_attention_heads"] * head_dim),
        "v_proj": (hidden, cfg["num_key_value_heads"] * head_dim),
    }
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    tensors = {}
    for layer in range(cfg["num_hidden_layers"]):
        for t in TARGETS:
            n_in, n_out = sizes[t]
            key = f"base_model.model.model.layers.{layer}.self_attn.{t}"
            tensors[f"{key}.lora_A.weight"] = (torch.randn(RANK, n_in, generator=gen) * 0.02).contiguous()
            tensors[f"{key}.lora_B.weight"] = (torch.randn(n_out, RANK, generator=gen) * 0.02).contiguous()
    path = os.path.join(out, name)
    os.makedirs(path, exist_ok=True)
    save_file(tensors, os.path.join(path, "adapter_model.safetensors"))
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": model_dir,
        "r": RANK,
        "lora_alpha": ALPHA,
        "lora_dropout": 0.0,
        "target_modules": TARGETS,
        "bias": "none",
        "fan_in_fan_out": False,
        "modules_to_save": None,
        "use_rslora": False,
        "use_dora": False,
        "inference_mode": True,
    }
    with open(os.path.join(path, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    print(f"tiny LoRA {name}: rank {RANK}, {len(tensors)} tensors, saved in {path}")


def main() -> None:
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    model_dir, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    for name in names:
        adapter(model_dir, out, name)


if __name__ == "__main__":
    main()
