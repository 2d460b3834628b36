"""Seed 002 (StatQuest): one attention layer written by hand, run on one unbatched sequence, residual added in
forward, sinusoidal positions in a buffer, no norm, max_len 6."""
import torch
import torch.nn as nn
import torch.nn.functional as F

token_to_id = {"what": 0, "is": 1, "statquest": 2, "awesome": 3, "<EOS>": 4}
id_to_token = dict(map(reversed, token_to_id.items()))


class PositionEncoding(nn.Module):

    def __init__(self, d_model=2, max_len=6):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(start=0, end=max_len, step=1).float().unsqueeze(1)
        embedding_index = torch.arange(start=0, end=d_model, step=2).float()
        div_term = torch.tensor(10000.)**(embedding_index / d_model)
        pe[:, 0::2] = torch.sin(position / div_term)
        pe[:, 1::2] = torch.cos(position / div_term)
        self.register_buffer('pe', pe)

    def forward(self, word_embeddings):
        return word_embeddings + self.pe[:word_embeddings.size(0), :]


class Attention(nn.Module):

    def __init__(self, d_model=2):
        super().__init__()
        self.W_q = nn.Linear(in_features=d_model, out_features=d_model, bias=False)
        self.W_k = nn.Linear(in_features=d_model, out_features=d_model, bias=False)
        self.W_v = nn.Linear(in_features=d_model, out_features=d_model, bias=False)
        self.row_dim = 0
        self.col_dim = 1

    def forward(self, encodings_for_q, encodings_for_k, encodings_for_v, mask=None):
        q = self.W_q(encodings_for_q)
        k = self.W_k(encodings_for_k)
        v = self.W_v(encodings_for_v)
        sims = torch.matmul(q, k.transpose(dim0=self.row_dim, dim1=self.col_dim))
        scaled_sims = sims / torch.tensor((k.size(self.col_dim))**0.5)
        device = scaled_sims.device
        mask = mask.to(device)
        if mask is not None:
            scaled_sims = scaled_sims.masked_fill(mask=mask, value=-1e9)
        attention_percents = F.softmax(scaled_sims, dim=self.col_dim)
        attention_scores = torch.matmul(attention_percents, v)
        return attention_scores


class DecoderOnlyTransformer(nn.Module):  # the seed's is a LightningModule (lightning is not a dependency)

    def __init__(self, num_tokens, d_model, max_len):
        super().__init__()
        self.we = nn.Embedding(num_embeddings=num_tokens, embedding_dim=d_model)
        self.pe = PositionEncoding(d_model=d_model, max_len=max_len)
        self.attention = Attention(d_model=d_model)
        self.fc = nn.Linear(in_features=d_model, out_features=num_tokens)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, token_ids):
        word_embeddings = self.we(token_ids)
        position_encoded = self.pe(word_embeddings)
        mask = torch.tril(torch.ones(token_ids.size(dim=0), token_ids.size(dim=0))) == 0
        self_attention_values = self.attention(position_encoded,
                                               position_encoded,
                                               position_encoded,
                                               mask=mask)
        residual_connection_values = position_encoded + self_attention_values
        fc_layer_out = self.fc(residual_connection_values)
        return fc_layer_out
