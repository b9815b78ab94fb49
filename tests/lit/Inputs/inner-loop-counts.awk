# Counts the vector instructions of the first loop with FMAs in function
# `fn` (-v fn=NAME) of an AT&T assembly listing: the lines from a label to
# the branch back to it. Prints
#   fma F broadcast B load L store S gather G other O
# (load: a vmovups/vmovaps from memory; other: any other instruction on
# %zmm/%ymm/%xmm registers).
$0 ~ "^" fn ":" { in_fn = 1; next }
in_fn && /^[ \t]*\.size/ { exit }
in_fn && /^\.LBB[0-9_]+:/ {
  label = substr($1, 1, length($1) - 1)
  fma = broadcast = load = store = gather = other = 0
  next
}
in_fn && label != "" {
  op = $1
  if (op ~ /^j/ && $2 == label) {
    if (fma > 0) {
      print "fma " fma " broadcast " broadcast " load " load " store " store " gather " gather " other " other
      exit
    }
    next
  }
  if (op ~ /^vfmadd/) fma++
  else if (op ~ /^vbroadcastss/) broadcast++
  else if (op ~ /^vmov[ua]ps/) { if ($2 ~ /\(/) load++; else store++ }
  else if (op ~ /^v(gather|scatter)/) gather++
  else if ($0 ~ /%[xyz]mm/) other++
}
