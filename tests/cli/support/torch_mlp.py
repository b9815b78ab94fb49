# The PyTorch outputs of the public MLP (tests/models/generate.py, same seeds)
# for other inputs, e.g. other batch sizes:
#   torch_mlp.py SRC_DIR IN.npy OUT.npy [IN.npy OUT.npy ...]
import sys, numpy as np, torch
sys.path.insert(0, sys.argv[1] + "/tests/models")
import generate as g
builder, seed = dict(g.MODELS)["mlp"]
torch.manual_seed(seed)
model, _, _ = builder(torch.Generator().manual_seed(1000 + seed))
g.make_nontrivial(model, torch.Generator().manual_seed(2000 + seed))
model.eval()
args = sys.argv[2:]
with torch.no_grad():
    for i in range(0, len(args), 2):
        np.save(args[i + 1], model(torch.from_numpy(np.load(args[i]))).numpy())
