#!/usr/bin/env bash
# mlcc-import as a user runs it: the public models (generated with PyTorch
# into a temporary directory) imported, validated with their weights, and run
# through mlcc-run against PyTorch's outputs; small per-op ONNX models made
# with onnx.helper (opset-dependent forms, symbolic shapes, --shape); and the
# error paths (unsupported ops listed at once, corrupt/truncated/non-ONNX
# files, missing external data) with exit 1 and no output file.
source "$2/tests/cli/lib/common.sh"
tool=$bin/mlcc-import
have_run=0
[[ -x $bin/mlcc-run ]] && have_run=1

# --- public models ---
if public_models torch torchvision onnx; then
  for m in mlp cnn resnet18 mobilenetv2 transformer; do
    start=$(date +%s.%N)
    check "$m imports" run 0 "$tmp/models/$m.onnx" -o "$tmp/$m.ir"
    end=$(date +%s.%N)
    [[ $m == resnet18 ]] && echo "     resnet18 import time: $(echo "$end - $start" | bc) s"
    check "$m weights file beside the IR" test -f "$tmp/$m.safetensors"
    check "$m validates with weights" "$bin/mlcc-inspect" --validate --check-weights "$tmp/$m.ir"
    check "$m keeps the input name" contains "$tmp/$m.ir" '^graph @main(%input:'
    if [[ $have_run == 1 ]]; then
      rm -rf "$tmp/out_$m"
      check "$m runs (mlcc-run)" "$bin/mlcc-run" -q "$tmp/$m.ir" --input "input=$tmp/models/$m.input.npy" \
        --output-dir "$tmp/out_$m"
      check "$m matches PyTorch" compare "$tmp/out_$m/output.npy" "$tmp/models/$m.output.npy"
    else
      echo "skip $m end to end: mlcc-run not built"
    fi
  done
  check "mlp batch is symbolic" contains "$tmp/mlp.ir" 'input: f32\[batch, 784\]'
  check "--shape binds the batch" run 0 "$tmp/models/mlp.onnx" --shape input=4x784 -o "$tmp/mlp4.ir"
  check "--shape gives a static type" contains "$tmp/mlp4.ir" 'input: f32\[4, 784\]'
  check "--shape wrong rank" run 1 "$tmp/models/mlp.onnx" --shape input=4 -o "$tmp/bad.ir"
  check "--shape unknown input" run 1 "$tmp/models/mlp.onnx" --shape nosuch=4x784 -o "$tmp/bad.ir"
  check "--shape bad syntax is an error" run 1 "$tmp/models/mlp.onnx" --shape input=4xq -o "$tmp/bad.ir"
  check "no output on errors" absent "$tmp/bad.ir"
  check "stdout + --weights" bash -c "'$tool' '$tmp/models/cnn.onnx' --weights '$tmp/cnnw.safetensors' > '$tmp/cnn_stdout.ir'"
  check "stdout IR names the weights" contains "$tmp/cnn_stdout.ir" "weights \"$tmp/cnnw.safetensors\""
  check "deterministic" bash -c "mkdir -p '$tmp/det' && '$tool' '$tmp/models/resnet18.onnx' -o '$tmp/det/resnet18.ir' && cmp -s '$tmp/det/resnet18.ir' '$tmp/resnet18.ir' && cmp -s '$tmp/det/resnet18.safetensors' '$tmp/resnet18.safetensors'"
fi

# --- small per-op models (onnx.helper) ---
if python_has onnx; then
  /usr/bin/python3 "$src/tests/cli/import_models.py" "$tmp/ops" || { echo "FAIL making the per-op models"; fails=$((fails + 1)); }
  for f in "$tmp"/ops/*.onnx; do
    [[ -e $f ]] || continue
    n=$(basename "$f" .onnx)
    case $n in
      err_*) continue ;;
    esac
    check "op model $n imports" run 0 "$f" -o "$tmp/ops/$n.ir"
    check "op model $n validates" "$bin/mlcc-inspect" --validate --check-weights "$tmp/ops/$n.ir"
    if [[ -f $tmp/ops/$n.expect ]]; then
      while IFS= read -r pat; do check "op model $n has '$pat'" contains "$tmp/ops/$n.ir" "$pat"; done <"$tmp/ops/$n.expect"
    fi
    if [[ $have_run == 1 && -f $tmp/ops/$n.in.npy ]]; then
      rm -rf "$tmp/ops/out_$n"
      check "op model $n runs" "$bin/mlcc-run" -q "$tmp/ops/$n.ir" --input "x=$tmp/ops/$n.in.npy" --output-dir "$tmp/ops/out_$n"
      check "op model $n matches numpy" compare "$tmp/ops/out_$n/y.npy" "$tmp/ops/$n.out.npy"
    fi
  done
  # Op models whose lowering is their own (the recurrences' scans, the 3-D transposed convolution's
  # taps) through the compiled chain too.
  for n in lstm_bidirectional_lens gru_reverse_lens gru_bidirectional_lens convtranspose3d_output_shape; do
    [[ $have_run == 1 && -f $tmp/ops/$n.onnx ]] || continue
    d=$tmp/ops/chain_$n
    check "op model $n compiles" "$bin/mlcc-pipeline" run "$src/pipelines/cpu-default.yaml" --input "$tmp/ops/$n.onnx" \
      --build-dir "$d" -q
    check "op model $n model.so runs" "$bin/mlcc-run" -q "$d/model.so" --input "x=$tmp/ops/$n.in.npy" --output-dir "$d/out"
    check "op model $n model.so matches numpy" compare "$d/out/y.npy" "$tmp/ops/$n.out.npy"
  done
  # Errors.
  check "unsupported ops fail" fails_saying "StringNormalizer (2 nodes, first: 'sn_a')" "$tmp/ops/err_unsupported.onnx" -o "$tmp/ops/u.ir"
  check "unsupported lists NonMaxSuppression" contains "$tmp/err" "NonMaxSuppression (1 node, first: 'nms_a'): its output shape depends on the input values"
  check "unsupported lists custom domains" contains "$tmp/err" "com.example.Foo (1 node, first: 'foo_a')"
  check "NonZero of a run-time value fails naming the input" fails_saying "(NonZero): the input must be known at import: its output shape depends on the input values.*--bind x=" "$tmp/ops/err_nonzero_runtime.onnx" -o "$tmp/ops/u.ir"
  check "no output for unsupported" absent "$tmp/ops/u.ir"
  check "If on a run-time condition fails naming the input" fails_saying "(If): the condition must be known at import (mlcc compiles one branch).*--bind x=" "$tmp/ops/err_if_runtime.onnx" -o "$tmp/ops/u.ir"
  check "a Loop whose body computes its condition from the data fails" fails_saying "(Loop): the condition the body computes must be known at import (mlcc unrolls the loop)" "$tmp/ops/err_loop_runtime.onnx" -o "$tmp/ops/u.ir"
  check "Dropout in training mode fails" fails_saying "(Dropout): training mode is not supported" "$tmp/ops/err_dropout_training.onnx" -o "$tmp/ops/u.ir"
  check "a training model fails as training" fails_saying "training ops (domain ai.onnx.preview.training: Adagrad, Adam, Momentum, Gradient) are not supported" "$tmp/ops/err_training_domain.onnx" -o "$tmp/ops/u.ir"
  check "an Einsum whose ellipsis broadcasts fails" fails_saying "(Einsum): '...' stands for 1 and 0 dimensions in different operands (ellipsis broadcasting is not supported yet)" "$tmp/ops/err_einsum_broadcast.onnx" -o "$tmp/ops/u.ir"
  check "an op changed since opset 6 fails" fails_saying "ONNX opset 6 is supported only for ops unchanged since (Relu, Elu, Not, ...); node '' (Add) is not one of them" "$tmp/ops/err_opset6_add.onnx" -o "$tmp/ops/u.ir"
  check "an attribute no converter reads fails" fails_saying "(Relu): attribute 'alpha' is not supported" "$tmp/ops/err_unknown_attribute.onnx" -o "$tmp/ops/u.ir"
  check "a 3-D Conv whose depth window exceeds the depth fails" fails_saying "(Conv): the depth window (7) is larger than the padded depth (5)" "$tmp/ops/err_conv3d_depth_window.onnx" -o "$tmp/ops/u.ir"
  check "a ConvTranspose output_shape that is not a size fails" fails_saying "(ConvTranspose): output_shape\\[1\\] is -9223372036854775808, not a positive size" "$tmp/ops/err_convtranspose_output_shape.onnx" -o "$tmp/ops/u.ir"
  check "a NaN in a crop-and-resize roi fails" fails_saying "(Resize): roi value nan is not a finite number" "$tmp/ops/err_resize_crop_roi_nan.onnx" -o "$tmp/ops/u.ir"
  check "a 3-D ConvTranspose whose depth padding leaves no depth fails" fails_saying "(ConvTranspose): the depth padding (4, 4) leaves no output depth" "$tmp/ops/err_convtranspose3d_depth_pads.onnx" -o "$tmp/ops/u.ir"
  check "an input no converter reads fails" fails_saying "(Reshape): input 2 ('x') is not supported" "$tmp/ops/err_unread_input.onnx" -o "$tmp/ops/u.ir"
  check "no output for ignored attributes and inputs" absent "$tmp/ops/u.ir"
  check "missing external data fails" fails_saying "external data" "$tmp/ops/err_external_missing.onnx" -o "$tmp/ops/e.ir"
  check "no output for missing external data" absent "$tmp/ops/e.ir"
  for how in traversal absolute symlink; do
    [[ $how == symlink ]] && ln -sf ../outside.bin "$tmp/ops/link.bin"
    check "external data outside the model's directory ($how) fails" fails_saying "external data location: '.*' \(leads outside the model's directory\|is an absolute path\)" "$tmp/ops/err_external_$how.onnx" -o "$tmp/ops/t.ir"
    check "  and writes nothing" absent "$tmp/ops/t.safetensors"
  done
  # --bind: an input that must be known at import becomes a constant.
  b=$tmp/ops/err_bind_reduce_axes.onnx
  check "an input needed at import fails and names --bind" fails_saying "axes (input 1) must be a constant integer tensor; it is the graph input 'axes': give its value with --bind axes=FILE.npy" "$b" -o "$tmp/ops/b.ir"
  check "--bind of an unknown input fails" fails_saying "--bind nope: the model has no input named 'nope'" "$b" --bind "nope=$tmp/ops/bind_axes.npy" -o "$tmp/ops/b.ir"
  check "--bind of another dtype fails" fails_saying "--bind axes: the file holds i32, but the input is i64" "$b" --bind "axes=$tmp/ops/bind_axes_i32.npy" -o "$tmp/ops/b.ir"
  check "--bind of another shape fails" fails_saying "--bind axes: the file's shape is \[2\], but the input's is \[1\]" "$b" --bind "axes=$tmp/ops/bind_axes_2.npy" -o "$tmp/ops/b.ir"
  check "--bind given twice fails" fails_saying "--bind axes is given twice" "$b" --bind "axes=$tmp/ops/bind_axes.npy" --bind "axes=$tmp/ops/bind_axes_2.npy" -o "$tmp/ops/b.ir"
  check "--bind of a missing file fails" fails_saying "nosuch.npy" "$b" --bind "axes=$tmp/ops/nosuch.npy" -o "$tmp/ops/b.ir"
  check "--bind without a file fails" fails_saying "expected NAME=FILE.npy" "$b" --bind "axes" -o "$tmp/ops/b.ir"
  check "no output after --bind errors" absent "$tmp/ops/b.ir"
  bc=$tmp/ops/err_bind_computed_axes.onnx
  check "a value computed from an input names that input" fails_saying "axes (input 1) must be a constant integer tensor; it is computed from the graph input 'axes': give its value with --bind axes=FILE.npy" "$bc" -o "$tmp/ops/b.ir"
  check "  and binding it imports" run 0 "$bc" --bind "axes=$tmp/ops/bind_axes.npy" -o "$tmp/ops/bc.ir"
  check "--bind imports" run 0 "$b" --bind "axes=$tmp/ops/bind_axes.npy" -o "$tmp/ops/b.ir"
  check "  the bound input is no parameter" contains "$tmp/ops/b.ir" '^graph @main(%x: f32\[3, 4\]) -> f32\[3\]'
  if [[ $have_run == 1 ]]; then
    check "  and sums over the bound axis" "$bin/mlcc-run" -q "$tmp/ops/b.ir" --input "x=$tmp/ops/bind_x.npy" --output-dir "$tmp/ops/out_bind"
    check "  as numpy does" compare "$tmp/ops/out_bind/y.npy" "$tmp/ops/bind_y.npy"
  fi
  check "external data imports" run 0 "$tmp/ops/external.onnx" -o "$tmp/ops/ext.ir"
  check "external data validates" "$bin/mlcc-inspect" --validate --check-weights "$tmp/ops/ext.ir"
else
  echo "skip per-op models: onnx not importable by /usr/bin/python3"
fi

# --- corrupt inputs ---
printf 'this is not an onnx model\n' >"$tmp/text.onnx"
check "text file fails" fails_saying "error: .*ONNX" "$tmp/text.onnx" -o "$tmp/x.ir"
: >"$tmp/empty.onnx"
check "empty file fails" run 1 "$tmp/empty.onnx" -o "$tmp/x.ir"
head -c 3000000 /dev/urandom >"$tmp/random.onnx"
check "random bytes fail" run 1 "$tmp/random.onnx" -o "$tmp/x.ir"
if [[ -f $tmp/models/resnet18.onnx ]]; then
  head -c 20000000 "$tmp/models/resnet18.onnx" >"$tmp/trunc.onnx"
  check "truncated model fails" run 1 "$tmp/trunc.onnx" -o "$tmp/x.ir"
  head -c 1000 "$tmp/models/mlp.onnx" >"$tmp/trunc2.onnx"
  check "truncated header fails" run 1 "$tmp/trunc2.onnx" -o "$tmp/x.ir"
fi
check "missing file fails" run 1 "$tmp/nosuch.onnx" -o "$tmp/x.ir"
check "no output file after errors" absent "$tmp/x.ir"
check "no weights file after errors" absent "$tmp/x.safetensors"
check "usage error exits 2" run 2 --no-such-flag

finish import
