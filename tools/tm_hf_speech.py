"""Small re-implementations of HuggingFace transformers' speech models, op for op as their eager
modeling code runs them in training (transformers is not installed on the calibration machine:
Debian's torch 1.13 only). Module and parameter names follow the HF classes. Sources
(huggingface/transformers):
- Whisper: src/transformers/models/whisper/modeling_whisper.py @5c48f71a682fa7bbcbde1be5d2a2ac16cc654210
  (WhisperAttention = BartAttention's eager path: q_proj * scaling, _shape(...).contiguous(),
  bmm, + the 4-D causal mask, softmax, dropout, bmm, transpose + reshape, out_proj)
- wav2vec2: src/transformers/models/wav2vec2/modeling_wav2vec2.py @73a515ed5fdfb409055362aacc3b62fa863530c1
  (the same BartAttention; Wav2Vec2GroupNormConvLayer, weight-normed positional convolution,
  post-LN Wav2Vec2EncoderLayer, Wav2Vec2ForCTC's log_softmax(fp32) + ctc_loss)
forward(x, labels) returns the loss (as tools/tm_hf_vision.py's models); `region` tags the
chain layer about to run (trainmem's chain: the stem, one layer per encoder / decoder layer,
the head). LayerDrop and SpecAugment are off in the measured configs (trainmem runs every
layer and does not model the random time masks).

Shared by tools/measure_hf_speech.py. Run with /usr/bin/python3 (torch 1.13).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

ACT = {"gelu": nn.GELU, "relu": nn.ReLU}


class BartAttention(nn.Module):
    """WhisperAttention / Wav2Vec2Attention (BartAttention.forward, eager, no cache)."""

    def __init__(self, h, heads, dropout, k_bias):
        super().__init__()
        self.h, self.heads, self.d, self.p = h, heads, h // heads, dropout
        self.scaling = self.d ** -0.5
        self.k_proj = nn.Linear(h, h, bias=k_bias)
        self.v_proj = nn.Linear(h, h)
        self.q_proj = nn.Linear(h, h)
        self.out_proj = nn.Linear(h, h)

    def _shape(self, t, b):
        return t.view(b, -1, self.heads, self.d).transpose(1, 2).contiguous()

    def forward(self, x, kv=None, mask=None):
        b, t, _ = x.size()
        q = self.q_proj(x) * self.scaling
        src = x if kv is None else kv
        k = self._shape(self.k_proj(src), b)
        v = self._shape(self.v_proj(src), b)
        proj = (b * self.heads, -1, self.d)
        q = self._shape(q, b).view(*proj)
        k, v = k.reshape(*proj), v.reshape(*proj)
        s = k.size(1)
        w = torch.bmm(q, k.transpose(1, 2))
        if mask is not None:
            w = w.view(b, self.heads, t, s) + mask
            w = w.view(b * self.heads, t, s)
        w = F.softmax(w, dim=-1)
        w = F.dropout(w, p=self.p, training=self.training)
        o = torch.bmm(w, v).view(b, self.heads, t, self.d).transpose(1, 2)
        return self.out_proj(o.reshape(b, t, self.h))


# ---------------------------------------------------------------- Whisper
class WhisperLayer(nn.Module):
    """WhisperEncoderLayer (cross=False) / WhisperDecoderLayer (cross=True), pre-LN."""

    def __init__(self, c, heads, ffn, cross):
        super().__init__()
        h = c["d_model"]
        self.p, self.pa = c.get("dropout", 0.0), c.get("activation_dropout", 0.0)
        self.self_attn = BartAttention(h, heads, c.get("attention_dropout", 0.0), False)
        self.self_attn_layer_norm = nn.LayerNorm(h)
        if cross:
            self.encoder_attn = BartAttention(h, heads, c.get("attention_dropout", 0.0), False)
            self.encoder_attn_layer_norm = nn.LayerNorm(h)
        self.activation_fn = ACT[c.get("activation_function", "gelu")]()
        self.fc1 = nn.Linear(h, ffn)
        self.fc2 = nn.Linear(ffn, h)
        self.final_layer_norm = nn.LayerNorm(h)

    def forward(self, x, mask=None, enc=None):
        drop = lambda t, p: F.dropout(t, p=p, training=self.training)  # noqa: E731
        x = x + drop(self.self_attn(self.self_attn_layer_norm(x), mask=mask), self.p)
        if enc is not None:
            x = x + drop(self.encoder_attn(self.encoder_attn_layer_norm(x), kv=enc), self.p)
        y = drop(self.activation_fn(self.fc1(self.final_layer_norm(x))), self.pa)
        return x + drop(self.fc2(y), self.p)


def causal_mask(b, t, dtype):
    """_prepare_4d_causal_attention_mask without padding: [b, 1, t, t] of 0 / finfo.min."""
    m = torch.full((t, t), torch.finfo(dtype).min)
    cond = torch.arange(t)
    m.masked_fill_(cond < (cond + 1).view(t, 1), 0)
    return m.to(dtype)[None, None, :, :].expand(b, 1, t, t)


class WhisperForConditionalGeneration(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["d_model"]
        self.c, self.region = c, None
        m = nn.Module()
        enc = nn.Module()
        enc.conv1 = nn.Conv1d(c["num_mel_bins"], h, kernel_size=3, padding=1)
        enc.conv2 = nn.Conv1d(h, h, kernel_size=3, stride=2, padding=1)
        enc.embed_positions = nn.Embedding(c["max_source_positions"], h)
        enc.embed_positions.requires_grad_(False)
        enc.layers = nn.ModuleList([WhisperLayer(c, c["encoder_attention_heads"], c["encoder_ffn_dim"], False)
                                    for _ in range(c["encoder_layers"])])
        enc.layer_norm = nn.LayerNorm(h)
        dec = nn.Module()
        dec.embed_tokens = nn.Embedding(c["vocab_size"], h, c.get("pad_token_id", 50257))
        dec.embed_positions = nn.Embedding(c["max_target_positions"], h)  # WhisperPositionalEmbedding
        dec.layers = nn.ModuleList([WhisperLayer(c, c["decoder_attention_heads"], c["decoder_ffn_dim"], True)
                                    for _ in range(c["decoder_layers"])])
        dec.layer_norm = nn.LayerNorm(h)
        m.encoder, m.decoder = enc, dec
        self.model = m
        self.proj_out = nn.Linear(h, c["vocab_size"], bias=False)
        self.proj_out.weight = dec.embed_tokens.weight  # tie_word_embeddings

    def _tag(self, name):
        if self.region is not None:
            self.region(name)

    def shift_tokens_right(self, labels):
        s = labels.new_zeros(labels.shape)
        s[:, 1:] = labels[:, :-1].clone()
        s[:, 0] = self.c.get("decoder_start_token_id", 50258)
        s.masked_fill_(s == -100, self.c.get("pad_token_id", 50257))
        return s

    def forward(self, x, labels):
        enc, dec = self.model.encoder, self.model.decoder
        p = self.c.get("dropout", 0.0)
        self._tag("stem")  # WhisperEncoder.forward
        e = F.gelu(enc.conv1(x))
        e = F.gelu(enc.conv2(e)).permute(0, 2, 1)
        e = F.dropout(e + enc.embed_positions.weight, p=p, training=self.training)
        for i, layer in enumerate(enc.layers):
            self._tag(f"block{i}")
            e = layer(e)
        e = enc.layer_norm(e)
        ids = self.shift_tokens_right(labels)  # WhisperForConditionalGeneration.forward
        b, t = ids.shape
        y = dec.embed_tokens(ids)  # WhisperDecoder.forward
        mask = causal_mask(b, t, y.dtype)
        y = F.dropout(y + dec.embed_positions.weight[:t], p=p, training=self.training)
        for j, layer in enumerate(dec.layers):
            self._tag(f"block{len(enc.layers) + j}")
            y = layer(y, mask=mask, enc=e)
        self._tag("head")
        logits = self.proj_out(dec.layer_norm(y))
        return F.cross_entropy(logits.view(-1, self.c["vocab_size"]), labels.reshape(-1))


# ---------------------------------------------------------------- wav2vec2
class ConvLayer(nn.Module):
    """Wav2Vec2GroupNormConvLayer (norm=True) / Wav2Vec2NoLayerNormConvLayer."""

    def __init__(self, c, i, norm):
        super().__init__()
        cin = c["conv_dim"][i - 1] if i > 0 else 1
        cout = c["conv_dim"][i]
        self.conv = nn.Conv1d(cin, cout, kernel_size=c["conv_kernel"][i], stride=c["conv_stride"][i],
                              bias=c.get("conv_bias", False))
        if norm:
            self.layer_norm = nn.GroupNorm(num_groups=cout, num_channels=cout, affine=True)
        self.activation = ACT[c.get("feat_extract_activation", "gelu")]()

    def forward(self, x):
        x = self.conv(x)
        if hasattr(self, "layer_norm"):
            x = self.layer_norm(x)
        return self.activation(x)


class PositionalConv(nn.Module):
    """Wav2Vec2PositionalConvEmbedding: weight_norm(conv, dim=2), SamePad, GELU."""

    def __init__(self, c):
        super().__init__()
        h, k = c["hidden_size"], c["num_conv_pos_embeddings"]
        conv = nn.Conv1d(h, h, kernel_size=k, padding=k // 2, groups=c["num_conv_pos_embedding_groups"])
        self.conv = nn.utils.weight_norm(conv, name="weight", dim=2)  # torch 1.13: no parametrizations form
        self.remove = 1 if k % 2 == 0 else 0
        self.activation = ACT[c.get("feat_extract_activation", "gelu")]()

    def forward(self, x):
        x = self.conv(x.transpose(1, 2))
        if self.remove:
            x = x[:, :, :-self.remove]
        return self.activation(x).transpose(1, 2)


class Wav2Vec2EncoderLayer(nn.Module):
    """Post-LN Wav2Vec2EncoderLayer with Wav2Vec2FeedForward."""

    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.attention = BartAttention(h, c["num_attention_heads"], c.get("attention_dropout", 0.1), True)
        self.dropout = nn.Dropout(c.get("hidden_dropout", 0.1))
        self.layer_norm = nn.LayerNorm(h, eps=c.get("layer_norm_eps", 1e-5))
        ff = nn.Module()
        ff.intermediate_dropout = nn.Dropout(c.get("activation_dropout", 0.1))
        ff.intermediate_dense = nn.Linear(h, c["intermediate_size"])
        ff.intermediate_act_fn = ACT[c.get("hidden_act", "gelu")]()
        ff.output_dense = nn.Linear(c["intermediate_size"], h)
        ff.output_dropout = nn.Dropout(c.get("hidden_dropout", 0.1))
        self.feed_forward = ff
        self.final_layer_norm = nn.LayerNorm(h, eps=c.get("layer_norm_eps", 1e-5))

    def ff(self, x):
        f = self.feed_forward
        x = f.intermediate_dropout(f.intermediate_act_fn(f.intermediate_dense(x)))
        return f.output_dropout(f.output_dense(x))

    def forward(self, x):
        x = self.layer_norm(x + self.dropout(self.attention(x)))
        return self.final_layer_norm(x + self.ff(x))


class Wav2Vec2ForCTC(nn.Module):
    def __init__(self, c):
        super().__init__()
        assert c.get("feat_extract_norm", "group") == "group" and not c.get("do_stable_layer_norm", False)
        h = c["hidden_size"]
        self.c, self.region = c, None
        w = nn.Module()
        w.feature_extractor = nn.Module()
        w.feature_extractor.conv_layers = nn.ModuleList([ConvLayer(c, i, i == 0) for i in range(len(c["conv_dim"]))])
        fp = nn.Module()
        fp.layer_norm = nn.LayerNorm(c["conv_dim"][-1], eps=c.get("layer_norm_eps", 1e-5))
        fp.projection = nn.Linear(c["conv_dim"][-1], h)
        fp.dropout = nn.Dropout(c.get("feat_proj_dropout", 0.0))
        w.feature_projection = fp
        e = nn.Module()
        e.pos_conv_embed = PositionalConv(c)
        e.layer_norm = nn.LayerNorm(h, eps=c.get("layer_norm_eps", 1e-5))
        e.dropout = nn.Dropout(c.get("hidden_dropout", 0.1))
        e.layers = nn.ModuleList([Wav2Vec2EncoderLayer(c) for _ in range(c["num_hidden_layers"])])
        w.encoder = e
        self.wav2vec2 = w
        self.dropout = nn.Dropout(c.get("final_dropout", 0.1))
        self.lm_head = nn.Linear(h, c["vocab_size"])

    def _tag(self, name):
        if self.region is not None:
            self.region(name)

    def out_lengths(self, n):  # _get_feat_extract_output_lengths
        for k, s in zip(self.c["conv_kernel"], self.c["conv_stride"]):
            n = torch.div(n - k, s, rounding_mode="floor") + 1
        return n

    def forward(self, x, labels):
        w = self.wav2vec2
        self._tag("stem")
        h = x[:, None]  # Wav2Vec2FeatureEncoder.forward (_requires_grad and training)
        h.requires_grad = True
        for layer in w.feature_extractor.conv_layers:
            h = layer(h)
        h = h.transpose(1, 2)
        h = w.feature_projection.dropout(w.feature_projection.projection(w.feature_projection.layer_norm(h)))
        e = w.encoder
        for i, layer in enumerate(e.layers):
            self._tag(f"block{i}")
            if i == 0:  # Wav2Vec2Encoder.forward
                h = e.dropout(e.layer_norm(h + e.pos_conv_embed(h)))
            h = layer(h)
        self._tag("head")
        logits = self.lm_head(self.dropout(h))
        # Wav2Vec2ForCTC.forward: attention_mask None -> ones; labels >= 0 are the targets
        input_lengths = self.out_lengths(torch.ones_like(x, dtype=torch.long).sum(-1))
        labels_mask = labels >= 0
        target_lengths = labels_mask.sum(-1)
        flattened = labels.masked_select(labels_mask)
        log_probs = F.log_softmax(logits, dim=-1, dtype=torch.float32).transpose(0, 1)
        return F.ctc_loss(log_probs, flattened, input_lengths, target_lengths, blank=self.c.get("pad_token_id", 0),
                          reduction=self.c.get("ctc_loss_reduction", "sum"),
                          zero_infinity=self.c.get("ctc_zero_infinity", False))
