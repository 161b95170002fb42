"""NomicBERT in PyTorch, registered with transformers' Auto classes, for tiny_models.py.

nomic-embed-text's modelling file is downloaded from the hub at load time
(`trust_remote_code`); no PyPI package ships it and the hub is out of reach where sage-rs is
tested. This is sage-rs's own reading of that architecture, kept to its parameter names,
config fields and arithmetic, so that a folder saved here has the layout of a real
nomic-embed-text folder:

- embeddings: word + token type (+ absolute positions only when nothing is rotary), LayerNorm
- post-norm blocks: x = norm1(x + out_proj(attention(Wqkv x))); x = norm2(x + mlp(x))
- rotary on the first `rotary_emb_fraction` of each head (GPT-NeoX halves by default), base
  `rotary_emb_base`; with `rotary_scaling_factor`, dynamic NTK scaling of the base past
  `max_trained_positions`, from the padded length of the call (as the modelling file does)
- gated blocks (swiglu, geglu, glu): fc2(fc11(x) * act(fc12(x))), width rounded up to a
  multiple of 256; otherwise fc2(gelu(fc1(x)))
"""
import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoConfig, AutoModel, GPT2Config, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput


class NomicBertConfig(GPT2Config):
    model_type = "nomic_bert"

    def __init__(self, rotary_emb_fraction=0.0, rotary_emb_base=10_000,
                 rotary_emb_interleaved=False, rotary_scaling_factor=None,
                 max_trained_positions=2048, qkv_proj_bias=True, mlp_fc1_bias=True,
                 mlp_fc2_bias=True, prenorm=False, type_vocab_size=2, **kwargs):
        self.rotary_emb_fraction = rotary_emb_fraction
        self.rotary_emb_base = rotary_emb_base
        self.rotary_emb_interleaved = rotary_emb_interleaved
        self.rotary_scaling_factor = rotary_scaling_factor
        self.max_trained_positions = max_trained_positions
        self.qkv_proj_bias = qkv_proj_bias
        self.mlp_fc1_bias = mlp_fc1_bias
        self.mlp_fc2_bias = mlp_fc2_bias
        self.prenorm = prenorm
        self.type_vocab_size = type_vocab_size
        super().__init__(**kwargs)


def rotate(x, rotary_dim, base, interleaved):
    """x: (batch, tokens, heads, head_dim); rotates the first rotary_dim features."""
    tokens = x.shape[1]
    inv = 1.0 / (base ** (torch.arange(0, rotary_dim, 2, dtype=torch.float32) / rotary_dim))
    angles = torch.outer(torch.arange(tokens, dtype=torch.float32), inv)
    cos, sin = angles.cos()[None, :, None, :], angles.sin()[None, :, None, :]
    part, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    if interleaved:
        even, odd = part[..., 0::2], part[..., 1::2]
        turned = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
        turned = turned.flatten(-2)
    else:
        first, second = part.chunk(2, dim=-1)
        turned = torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)
    return torch.cat((turned, rest), dim=-1)


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        width = config.n_embd
        self.config = config
        self.heads = config.n_head
        self.head_dim = width // config.n_head
        self.rotary_dim = int(self.head_dim * config.rotary_emb_fraction)
        self.Wqkv = nn.Linear(width, 3 * width, bias=config.qkv_proj_bias)
        self.out_proj = nn.Linear(width, width, bias=config.qkv_proj_bias)

    def base(self, tokens):
        c = self.config
        if c.rotary_scaling_factor and tokens > c.max_trained_positions:
            f, d = c.rotary_scaling_factor, self.rotary_dim
            return c.rotary_emb_base * ((f * tokens / c.max_trained_positions) - (f - 1)) ** (d / (d - 2))
        return c.rotary_emb_base

    def forward(self, x, mask):
        batch, tokens, width = x.shape
        q, k, v = self.Wqkv(x).view(batch, tokens, 3, self.heads, self.head_dim).unbind(2)
        if self.rotary_dim > 0:
            base = self.base(tokens)
            q = rotate(q, self.rotary_dim, base, self.config.rotary_emb_interleaved)
            k = rotate(k, self.rotary_dim, base, self.config.rotary_emb_interleaved)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        # the modelling file's attention (scale 1/sqrt(head_dim)), so the throughput benchmark
        # times the kernel a nomic-embed user gets
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out_proj(context.transpose(1, 2).reshape(batch, tokens, width))


class Feedforward(nn.Module):
    def __init__(self, config):
        super().__init__()
        width = config.n_embd
        inner = config.n_inner or 4 * width
        self.activation = config.activation_function
        self.gated = self.activation in ("swiglu", "geglu", "glu")
        if self.gated:
            inner = math.ceil(inner / 256) * 256
            self.fc11 = nn.Linear(width, inner, bias=config.mlp_fc1_bias)
            self.fc12 = nn.Linear(width, inner, bias=config.mlp_fc1_bias)
        else:
            self.fc1 = nn.Linear(width, inner, bias=config.mlp_fc1_bias)
        self.fc2 = nn.Linear(inner, width, bias=config.mlp_fc2_bias)

    def forward(self, x):
        if self.gated:
            act = {"swiglu": F.silu, "geglu": F.gelu, "glu": torch.sigmoid}[self.activation]
            return self.fc2(self.fc11(x) * act(self.fc12(x)))
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn = Attention(config)
        self.mlp = Feedforward(config)
        self.norm1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.norm2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)

    def forward(self, x, mask):
        x = self.norm1(x + self.attn(x, mask))
        return self.norm2(x + self.mlp(x))


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.n_embd)
        if config.type_vocab_size > 0:
            self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.n_embd)
        if config.rotary_emb_fraction <= 0:
            self.position_embeddings = nn.Embedding(config.n_positions, config.n_embd)

    def forward(self, input_ids, token_type_ids):
        x = self.word_embeddings(input_ids)
        if hasattr(self, "token_type_embeddings"):
            x = x + self.token_type_embeddings(token_type_ids)
        if hasattr(self, "position_embeddings"):
            x = x + self.position_embeddings(torch.arange(input_ids.shape[1]))
        return x


class Encoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList(Block(config) for _ in range(config.n_layer))


class NomicBertModel(PreTrainedModel):
    config_class = NomicBertConfig
    base_model_prefix = "model"

    def __init__(self, config):
        super().__init__(config)
        self.embeddings = Embeddings(config)
        self.emb_ln = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.encoder = Encoder(config)
        self.post_init()

    def _init_weights(self, module):
        # every weight random, LayerNorms included, so no part of the arithmetic hides
        for p in module.parameters(recurse=False):
            nn.init.normal_(p, mean=1.0 if isinstance(module, nn.LayerNorm) and p.dim() == 1
                            and p is module.weight else 0.0, std=self.config.initializer_range)

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, **_):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.emb_ln(self.embeddings(input_ids, token_type_ids))
        mask = (1.0 - attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        for layer in self.encoder.layers:
            x = layer(x, mask)
        return BaseModelOutput(last_hidden_state=x)


AutoConfig.register("nomic_bert", NomicBertConfig)
AutoModel.register(NomicBertConfig, NomicBertModel)
