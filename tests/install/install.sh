# install.consumers: `cmake --install` into a temporary prefix; the installed qkgen builds a
# bundle from its own share/qkgen in a folder outside the source tree; and two outside
# programs, one found through find_package(qkgen) and one through pkg-config (each linked
# shared and static), load it on the default device and make its pipelines.
. "$(dirname "$0")/../cli/lib.sh"
build=$1 src=$2
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >"$scratch/install.log" || fail "cmake --install exited $?"
for f in bin/qkgen include/qkgen/qkrt.h include/qkgen/qkrt_ops.h share/qkgen/specs/formats/q4_0.yaml \
         share/qkgen/specs/formats/ggml_blocks.h share/qkgen/templates/matvec.comp; do
  [ -e "$prefix/$f" ] || fail "no $f in the installation"
done
so=$(find "$prefix" -name libqkrt.so.0 -print -quit)
[ -n "$so" ] || fail "no libqkrt.so.0 in the installation"
libdir=$(dirname "$so")
for f in libqkrt.so libqkrt.a pkgconfig/qkrt.pc cmake/qkgen/qkgenConfig.cmake; do
  [ -e "$libdir/$f" ] || fail "no $f beside libqkrt.so.0"
done
soname=$(objdump -p "$so" | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = libqkrt.so.0 ] || fail "SONAME is '$soname', not libqkrt.so.0"
# the shared library exports exactly the functions its headers declare (qkrt.h
# and the operations layer's qkrt_ops.h, which includes it; the preprocessor
# drops the comments that name functions too)
want=$(cc -E -P -I"$prefix/include/qkgen" "$prefix/include/qkgen/qkrt_ops.h" | grep -o 'qkrt_[a-z0-9_]* *(' | tr -d ' (' | sort -u)
have=$(nm -D --defined-only "$so" | awk '$2 == "T" { print $3 }' | sort)
[ "$want" = "$have" ] ||
  fail "libqkrt.so's exports differ from qkrt.h's and qkrt_ops.h's functions: $(diff <(echo "$want") <(echo "$have") | grep '^[<>]' | tr '\n' ' ')"
echo "installed: $(cd "$prefix" && find . -type f | grep -vc '^./share/') files and share/qkgen;" \
  "$soname exports $(echo "$have" | wc -l) functions"

# the installed qkgen, where there are no specs/ or templates/: its own share/qkgen
mkdir "$scratch/elsewhere" && cd "$scratch/elsewhere" || fail "no scratch folder"
unset QKGEN_SPECS QKGEN_TEMPLATES
"$prefix/bin/qkgen" list --formats | grep -q " $prefix/share/qkgen/specs/formats/q4_0.yaml\$" ||
  fail "the installed qkgen does not read $prefix/share/qkgen/specs"
# --model NAME finds the installed models (the format it lacks stops it there)
"$prefix/bin/qkgen" tune --model tiny --formats nosuch --dry-run --out "$scratch/t" 2>&1 |
  grep -q "^qkgen tune: $prefix/share/qkgen/specs/models/tiny.yaml: no format 'nosuch'" ||
  fail "the installed qkgen's --model tiny does not find $prefix/share/qkgen/specs/models/tiny.yaml"
"$prefix/bin/qkgen" build --representative --filter _q4_0_ --out "$scratch/out" ||
  fail "the installed qkgen build exited $?"
bundle=$scratch/out/default
[ -f "$bundle/manifest.json" ] || fail "no manifest.json in $bundle"

# the outside programs: a copy of tests/install, so that nothing reaches the source tree
cp -r "$src/tests/install" "$scratch/consumer"
cd "$scratch/consumer" || fail "no consumer copy"
cmake -S find_package -B fp -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="-Wall -Wextra -Werror" \
  >fp.log 2>&1 || { cat fp.log; fail "find_package(qkgen) project does not configure"; }
cmake --build fp >>fp.log 2>&1 || { cat fp.log; fail "find_package(qkgen) project does not build"; }
grep -qx "$prefix/share/qkgen" fp/data_dir.txt || fail "qkgen_DATA_DIR is $(cat fp/data_dir.txt)"
export PKG_CONFIG_PATH=$libdir/pkgconfig
flags=(-std=c99 -Wall -Wextra -pedantic -Werror)
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
cc "${flags[@]}" consumer.c $(pkg-config --cflags --libs qkrt) -Wl,-rpath,"$libdir" -o pc_shared ||
  fail "pkg-config qkrt: the shared build failed"
# shellcheck disable=SC2046
cc "${flags[@]}" consumer.c $(pkg-config --cflags qkrt) \
  $(pkg-config --static --libs qkrt | sed 's/-lqkrt\b/-l:libqkrt.a/') -o pc_static ||
  fail "pkg-config --static qkrt: the static build failed"
pass=0
for exe in fp/consumer_shared pc_shared fp/consumer_static pc_static; do
  case $exe in
  *shared) ldd "$exe" | grep -q "$libdir/libqkrt.so.0" || fail "$exe does not load $libdir/libqkrt.so.0" ;;
  *static) ! ldd "$exe" | grep -q libqkrt || fail "$exe loads a libqkrt" ;;
  esac
  out=$("./$exe" "$bundle") || fail "$exe exited $?: $out"
  echo "$exe: $out"
  pass=$((pass + 1))
done
# examples/engine's engine_ops: a whole MoE layer through the operations layer
# (qkrt_ops.h) of the installed libqkrt, on a bundle of the layer's q4_0 kernels
"$prefix/bin/qkgen" build --representative --out "$scratch/layer" -q \
  --filter _q4_0_,router_topk_f32,moe_combine_f32,swiglu_f32,quantize_q8 ||
  fail "the installed qkgen did not build the layer's bundle"
cmake -S "$src/examples/engine" -B ops -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
  >ops.log 2>&1 && cmake --build ops --target engine_ops >>ops.log 2>&1 ||
  { cat ops.log; fail "examples/engine's engine_ops does not build against the installation"; }
grep -q "warning:" ops.log && { cat ops.log; fail "engine_ops builds with warnings"; }
ops/engine_ops "$scratch/layer/default" || fail "engine_ops exited $?"
pass=$((pass + 1))
echo "$((pass + 2)) passed, 0 failed"
