"""Measures HF speech models, re-implemented op for op from transformers' modeling files
(tools/tm_hf_speech.py: WhisperForConditionalGeneration, Wav2Vec2ForCTC), on real PyTorch (CPU,
torch 1.13) and writes tests/fixtures/hf_speech.json: per case, the saved-for-backward bytes of
one training forward and the peak allocated bytes of one steady-state training step, measured
exactly as tools/measure_vision.py measures torchvision (its saved_bytes and step_peak, with
this file's models): saved_tensors_hooks (storages once, parameters and buffers excluded, the
inputs included) and torch.profiler memory events over a baseline.

Configs (small, so that a run takes minutes on a shared CPU): openai/whisper-tiny's config.json
(the fields that shape the model) with two encoder and two decoder layers and
max_source_positions 200 (400 log-mel frames, as WhisperEncoder requires 2 x that), and facebook/wav2vec2-base-960h's with two encoder
layers (a small config: the feature encoder's activations stay a large part of the peak),
LayerDrop and SpecAugment off (trainmem runs every layer and does not model the random time
masks); its dropouts stay 0.1 (on CPU a dropout keeps a noise tensor of its input's size).
Each model at two batch sizes and two target lengths (Whisper: decoder tokens; wav2vec2: CTC
labels per sample).

Run: nice /usr/bin/python3 tools/measure_hf_speech.py [--verbose] [--dry] [--out=PATH] [name filter...]
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import measure_vision as mv  # noqa: E402
import tm_hf_speech as hf  # noqa: E402

WHISPER_TINY_2L = {"model_type": "whisper", "architectures": ["WhisperForConditionalGeneration"],
                "d_model": 384, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 6,
                "decoder_attention_heads": 6, "encoder_ffn_dim": 1536, "decoder_ffn_dim": 1536,
                "vocab_size": 51865, "num_mel_bins": 80, "max_source_positions": 200,
                "max_target_positions": 448, "activation_function": "gelu", "dropout": 0.0,
                "attention_dropout": 0.0, "activation_dropout": 0.0, "scale_embedding": False,
                "tie_word_embeddings": True, "pad_token_id": 50257, "decoder_start_token_id": 50258,
                "encoder_layerdrop": 0.0, "decoder_layerdrop": 0.0}
WAV2VEC2_BASE_2L = {"model_type": "wav2vec2", "architectures": ["Wav2Vec2ForCTC"],
                    "conv_dim": [512] * 7, "conv_stride": [5, 2, 2, 2, 2, 2, 2],
                    "conv_kernel": [10, 3, 3, 3, 3, 2, 2], "conv_bias": False,
                    "feat_extract_norm": "group", "feat_extract_activation": "gelu",
                    "hidden_act": "gelu", "hidden_size": 768, "num_hidden_layers": 2,
                    "num_attention_heads": 12, "intermediate_size": 3072, "hidden_dropout": 0.1,
                    "attention_dropout": 0.1, "activation_dropout": 0.1, "feat_proj_dropout": 0.1,
                    "final_dropout": 0.1, "layerdrop": 0.0, "mask_time_prob": 0.0,
                    "num_conv_pos_embeddings": 128, "num_conv_pos_embedding_groups": 16,
                    "do_stable_layer_norm": False, "vocab_size": 32, "pad_token_id": 0,
                    "ctc_loss_reduction": "sum", "ctc_zero_infinity": False, "layer_norm_eps": 1e-5}
AUDIO = 16000  # 1 s at 16 kHz: 49 encoder frames


def case(name, config, b, opt, target, seq=None):
    c = {"name": f"{name} b{b} t{target} {opt}", "config": config, "microBatch": b, "optimizer": opt,
         "targetLen": target}
    if seq:
        c["seqLen"] = seq
    return c


CASES = [
    case("whisper-tiny-2l", WHISPER_TINY_2L, 1, "sgd", 32), case("whisper-tiny-2l", WHISPER_TINY_2L, 2, "adamw", 32),
    case("whisper-tiny-2l", WHISPER_TINY_2L, 1, "sgd", 128), case("whisper-tiny-2l", WHISPER_TINY_2L, 2, "sgd", 128),
    case("wav2vec2-base-2l", WAV2VEC2_BASE_2L, 1, "sgd", 10, AUDIO),
    case("wav2vec2-base-2l", WAV2VEC2_BASE_2L, 2, "adamw", 10, AUDIO),
    case("wav2vec2-base-2l", WAV2VEC2_BASE_2L, 1, "sgd", 30, AUDIO),
    case("wav2vec2-base-2l", WAV2VEC2_BASE_2L, 2, "sgd", 30, AUDIO),
]


def build(c):
    """The model, its input batch and labels (measure_vision.build's contract)."""
    torch.manual_seed(0)
    cfg, b, t = c["config"], c["microBatch"], c["targetLen"]
    if cfg["model_type"] == "whisper":
        model = hf.WhisperForConditionalGeneration(cfg)
        x = torch.randn(b, cfg["num_mel_bins"], 2 * cfg["max_source_positions"])
        labels = torch.randint(0, 50257, (b, t))
    else:
        model = hf.Wav2Vec2ForCTC(cfg)
        x = torch.randn(b, c["seqLen"])
        labels = torch.randint(1, cfg["vocab_size"], (b, t))
    model.train()
    return model, x, labels


def main():
    verbose = "--verbose" in sys.argv
    mv.build = build  # measure_vision's saved_bytes and step_peak build their model through it
    torch.set_num_threads(2)
    out = {"about": "HF speech models re-implemented from transformers' modeling files "
                    "(tools/tm_hf_speech.py) on torch 1.13 (CPU): per case the saved-for-backward "
                    "bytes (saved_tensors_hooks, storages once, parameters and buffers excluded, the "
                    "inputs included) and the peak allocated bytes of one steady-state step "
                    "(profiler events + baseline). Written by tools/measure_hf_speech.py.",
           "torch": torch.__version__, "cases": []}
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "hf_speech.json")
    path = next((a[6:] for a in sys.argv if a.startswith("--out=")), path)
    only = [a for a in sys.argv[1:] if not a.startswith("--")]
    for c in CASES:
        if only and not any(o in c["name"] for o in only):
            continue
        r = mv.saved_bytes(c, verbose)
        r.update(mv.step_peak(c))
        out["cases"].append(dict(c, **r))
        print(f"{c['name']:40s} saved {r['savedBytes']:>12d} peak {r['peakBytes']:>12d} {r['peakPhase']}",
              file=sys.stderr)
        if "--dry" not in sys.argv:  # written after each case (a long run can be stopped)
            with open(path, "w") as f:
                json.dump(out, f, indent=None, separators=(",", ":"))
                f.write("\n")


if __name__ == "__main__":
    main()
