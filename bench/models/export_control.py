#!/usr/bin/python3
"""export_control.py: three small models with control flow or data-dependent
output for the kiln vs ONNX Runtime comparison (tests: models_control).

  gru_greedy.onnx  a GRU decoder (hand-written cell, vocab 16, hidden 32)
                   decoding greedily for 8 steps from a float start state
                   h0 [1, 32]: torch.jit.script exports the loop as ONNX
                   Loop (the token of each step the argmax of the last,
                   fed back through an Embedding); outputs the tokens [8]
                   (int64, exact), the final state and the summed logits.
  if_gate.onnx     the sign of the input's sum picks one of two branches
                   (Linear + Relu, or Linear + Tanh * 2) applied to a Linear
                   of the input (scripted: ONNX If, the condition computed
                   on the device); x [1, 16] -> [1, 16]. Input seed 1 takes
                   the then branch, seed 2 the else branch.
  detect_nms.onnx  a detection-style head: a small conv net over a
                   [1, 3, 32, 32] image predicts box deltas and a score per
                   anchor of an 8x8 grid (anchors 12 px wide every 4 px, so
                   neighbours overlap with IoU ~0.5), decodes the boxes and
                   ends in torchvision.ops.nms (ONNX NonMaxSuppression, IoU
                   0.3): the kept anchor indices (int64, must match exactly).

Random weights with a fixed seed; opset 13. Usage: export_control.py [--out DIR]
"""
import argparse
import os

import torch
import torch.nn as nn
import torchvision  # before any export: importing it while tracing fails


class GRUGreedy(nn.Module):
    def __init__(self, vocab=16, emb=16, hidden=32, steps=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.wi = nn.Linear(emb, 3 * hidden)
        self.wh = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, vocab)
        self.hidden = hidden
        self.steps = steps

    def forward(self, h0):
        h = h0
        tok = torch.zeros([1], dtype=torch.long)
        toks = torch.zeros([0], dtype=torch.long)
        total = torch.zeros([1, 16])
        for _ in range(self.steps):
            gi = self.wi(self.emb(tok))
            gh = self.wh(h)
            ir, iz, inn = gi.chunk(3, 1)
            hr, hz, hn = gh.chunk(3, 1)
            r = torch.sigmoid(ir + hr)
            z = torch.sigmoid(iz + hz)
            n = torch.tanh(inn + r * hn)
            h = (1.0 - z) * n + z * h
            logits = self.out(h)
            total = total + logits
            tok = torch.argmax(logits, dim=1)
            toks = torch.cat([toks, tok], 0)
        return toks, h, total


class IfGate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)

    def forward(self, x):
        h = self.lin(x)
        if bool(x.sum() > 0):
            y = torch.relu(self.a(h))
        else:
            y = torch.tanh(self.b(h)) * 2.0
        return y


class DetectNMS(nn.Module):
    def __init__(self, grid=8, stride=4, size=12.0):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(16, 5, 1))
        ys, xs = torch.meshgrid(torch.arange(grid, dtype=torch.float32), torch.arange(grid, dtype=torch.float32), indexing="ij")
        cx, cy = xs.reshape(-1) * stride + stride / 2, ys.reshape(-1) * stride + stride / 2
        self.register_buffer("anchors", torch.stack([cx - size / 2, cy - size / 2, cx + size / 2, cy + size / 2], 1))

    def forward(self, img):
        p = self.body(img)[0].reshape(5, -1).t()          # [64, 5]
        boxes = self.anchors + torch.tanh(p[:, :4]) * 2.0   # corners moved by up to 2 px
        scores = torch.sigmoid(p[:, 4])
        return torchvision.ops.nms(boxes, scores, 0.3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    with torch.no_grad():
        m = torch.jit.script(GRUGreedy().eval())
        torch.onnx.export(m, (torch.randn(1, 32),), os.path.join(args.out, "gru_greedy.onnx"), opset_version=13,
                          input_names=["h0"], output_names=["tokens", "h", "logit_sum"])
        m = torch.jit.script(IfGate().eval())
        torch.onnx.export(m, (torch.randn(1, 16),), os.path.join(args.out, "if_gate.onnx"), opset_version=13,
                          input_names=["x"], output_names=["y"])
        m = DetectNMS().eval()
        torch.onnx.export(m, (torch.randn(1, 3, 32, 32),), os.path.join(args.out, "detect_nms.onnx"), opset_version=13,
                          input_names=["image"], output_names=["keep"])
    for f in ("gru_greedy", "if_gate", "detect_nms"):
        print(os.path.join(args.out, f + ".onnx"))


if __name__ == "__main__":
    main()
