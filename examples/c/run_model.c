/* run_model: load a compiled mlcc model (model.so, from mlcc-link) with
 * dlopen through the C ABI of include/mlcc/runtime.h, print its inputs and
 * outputs, run it on inputs read from .npy files (or a constant fill), and
 * print a summary of each output (optionally writing them as .npy).
 *
 *   run_model model.so                          # every input filled with 1
 *   run_model model.so x=x.npy --out outdir     # outdir/<output name>.npy
 *   run_model model.so --fill 0.5 --threads 1
 *
 * Inputs with symbolic dimensions (-1 in the info, a model compiled without
 * --shape) take the shape of their .npy file (filled inputs: 1 for each).
 *
 * Build: make (see Makefile); needs only runtime.h and -ldl. A program can
 * also link model.so directly (cc app.c ./model.so) and call the functions.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlcc/runtime.h"

/* The functions of runtime.h, looked up in the model.so. */
static struct {
  mlcc_model* (*load)(void);
  void (*free)(mlcc_model*);
  int (*num_inputs)(const mlcc_model*);
  int (*num_outputs)(const mlcc_model*);
  int (*input_info)(const mlcc_model*, int, mlcc_tensor_info*);
  int (*output_info)(const mlcc_model*, int, mlcc_tensor_info*);
  int (*run)(mlcc_model*, const void* const*, void* const*);
  int (*set_input_shape)(mlcc_model*, int, int, const int64_t*);
  int (*set_threads)(mlcc_model*, int);
  int (*get_threads)(const mlcc_model*);
  const char* (*last_error)(void);
} api;

static const char* const kDtypeNames[] = {"f32", "f16", "bf16", "i8", "i32", "i64",
                                          "bool", "u8", "f64", "i16", "u16", "u32"};
static const int kDtypeBytes[] = {4, 2, 2, 1, 4, 8, 1, 1, 8, 2, 2, 4};
/* numpy descr per dtype ("" for bf16, which numpy lacks). */
static const char* const kDescr[] = {"<f4", "<f2", "", "|i1", "<i4", "<i8", "|b1", "|u1", "<f8", "<i2", "<u2", "<u4"};

static int64_t numel(const mlcc_tensor_info* t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

static void printInfo(const char* what, int i, const mlcc_tensor_info* t) {
  printf("%s %d: %s %s[", what, i, t->name, kDtypeNames[t->dtype]);
  for (int d = 0; d < t->ndim; ++d) printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
  printf("]\n");
}

static double elementAt(const void* data, mlcc_dtype dt, int64_t i) {
  switch (dt) {
    case MLCC_F32: return ((const float*)data)[i];
    case MLCC_I8: return ((const int8_t*)data)[i];
    case MLCC_I32: return ((const int32_t*)data)[i];
    case MLCC_I64: return (double)((const int64_t*)data)[i];
    case MLCC_BOOL: return ((const uint8_t*)data)[i] != 0;
    case MLCC_U8: return ((const uint8_t*)data)[i];
    case MLCC_F64: return ((const double*)data)[i];
    case MLCC_I16: return ((const int16_t*)data)[i];
    case MLCC_U16: return ((const uint16_t*)data)[i];
    case MLCC_U32: return ((const uint32_t*)data)[i];
    default: return 0; /* f16/bf16: not summarized */
  }
}

static void fill(void* data, mlcc_dtype dt, int64_t n, double v) {
  for (int64_t i = 0; i < n; ++i) {
    switch (dt) {
      case MLCC_F32: ((float*)data)[i] = (float)v; break;
      case MLCC_I8: ((int8_t*)data)[i] = (int8_t)v; break;
      case MLCC_I32: ((int32_t*)data)[i] = (int32_t)v; break;
      case MLCC_I64: ((int64_t*)data)[i] = (int64_t)v; break;
      case MLCC_BOOL: ((uint8_t*)data)[i] = v != 0; break;
      case MLCC_U8: ((uint8_t*)data)[i] = (uint8_t)v; break;
      case MLCC_F64: ((double*)data)[i] = v; break;
      case MLCC_I16: ((int16_t*)data)[i] = (int16_t)v; break;
      case MLCC_U16: ((uint16_t*)data)[i] = (uint16_t)v; break;
      case MLCC_U32: ((uint32_t*)data)[i] = (uint32_t)v; break;
      default: memset(data, 0, (size_t)n * kDtypeBytes[dt]); return;
    }
  }
}

/* Opens a .npy file (format 1.x/2.x/3.x) and reads its header (a string to
 * free). NULL after printing why. */
static char* openNpy(const char* path, FILE** out) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "run_model: %s: %s\n", path, strerror(errno));
    return NULL;
  }
  unsigned char pre[12];
  int ok = fread(pre, 1, 10, f) == 10 && memcmp(pre, "\x93NUMPY", 6) == 0;
  size_t hlen = 0;
  if (ok && pre[6] == 1) {
    hlen = pre[8] | (pre[9] << 8);
  } else if (ok && fread(pre + 10, 1, 2, f) == 2) {
    hlen = pre[8] | (pre[9] << 8) | ((size_t)pre[10] << 16) | ((size_t)pre[11] << 24);
  } else {
    ok = 0;
  }
  char* header = ok ? calloc(hlen + 1, 1) : NULL;
  if (!header || fread(header, 1, hlen, f) != hlen) {
    fprintf(stderr, "run_model: %s: not a .npy file\n", path);
    free(header);
    fclose(f);
    return NULL;
  }
  *out = f;
  return header;
}

/* The shape of a .npy file (up to `max` dimensions): its rank, or -1. */
static int npyShape(const char* path, int64_t* shape, int max) {
  FILE* f = NULL;
  char* header = openNpy(path, &f);
  if (!header) return -1;
  fclose(f);
  const char* p = strstr(header, "'shape': (");
  int n = 0;
  for (p = p ? p + 10 : NULL; p && *p != ')' && n < max;) {
    char* end;
    shape[n++] = strtoll(p, &end, 10);
    if (end == p) break;
    p = end + strspn(end, ", ");
  }
  int ok = p && *p == ')';
  if (!ok) fprintf(stderr, "run_model: %s: cannot read the shape in header %s\n", path, header);
  free(header);
  return ok ? n : -1;
}

/* Reads a .npy file (C order) into `data`, checking its dtype and shape
 * against `t`. Returns 0, or -1 after printing why. */
static int readNpy(const char* path, const mlcc_tensor_info* t, void* data) {
  FILE* f = NULL;
  char* header = openNpy(path, &f);
  if (!header) return -1;
  /* The expected header fields: descr, fortran_order False, the shape tuple. */
  char want_descr[32], want_shape[256] = "(";
  snprintf(want_descr, sizeof want_descr, "'descr': '%s'", kDescr[t->dtype]);
  for (int d = 0; d < t->ndim; ++d) {
    size_t len = strlen(want_shape);
    snprintf(want_shape + len, sizeof want_shape - len, "%lld%s", (long long)t->shape[d],
             t->ndim == 1      ? ","
             : d + 1 < t->ndim ? ", "
                               : "");
  }
  strcat(want_shape, ")");
  if (!strstr(header, want_descr) || !strstr(header, "'fortran_order': False") ||
      !strstr(header, want_shape)) {
    fprintf(stderr, "run_model: %s: expected %s %s (C order) for input '%s', got header %s\n", path,
            kDescr[t->dtype], want_shape, t->name, header);
    free(header);
    fclose(f);
    return -1;
  }
  free(header);
  size_t bytes = (size_t)numel(t) * kDtypeBytes[t->dtype];
  int ok = fread(data, 1, bytes, f) == bytes;
  fclose(f);
  if (!ok) fprintf(stderr, "run_model: %s: truncated data\n", path);
  return ok ? 0 : -1;
}

static int writeNpy(const char* dir, const mlcc_tensor_info* t, const void* data) {
  if (!kDescr[t->dtype][0]) return 0; /* bf16 */
  char path[4096], header[512];
  snprintf(path, sizeof path, "%s/%s.npy", dir, t->name);
  int len =
      snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (", kDescr[t->dtype]);
  for (int d = 0; d < t->ndim; ++d)
    len += snprintf(header + len, sizeof header - len, "%lld%s", (long long)t->shape[d],
                    t->ndim == 1      ? ","
                    : d + 1 < t->ndim ? ", "
                                      : "");
  len += snprintf(header + len, sizeof header - len, "), }");
  while ((10 + len + 1) % 64) header[len++] = ' ';
  header[len++] = '\n';
  FILE* f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "run_model: %s: %s\n", path, strerror(errno));
    return -1;
  }
  unsigned char pre[10] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(len & 0xff), (unsigned char)(len >> 8)};
  size_t bytes = (size_t)numel(t) * kDtypeBytes[t->dtype];
  int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(header, 1, len, f) == (size_t)len &&
           fwrite(data, 1, bytes, f) == bytes;
  ok = (fclose(f) == 0) && ok;
  if (!ok) fprintf(stderr, "run_model: cannot write %s\n", path);
  return ok ? 0 : -1;
}

/* The file of input `name` (NAME=FILE among the arguments), or NULL. */
static const char* inputFile(int argc, char** argv, const char* name) {
  size_t len = strlen(name);
  for (int a = 2; a < argc; ++a)
    if (!strncmp(argv[a], name, len) && argv[a][len] == '=') return argv[a] + len + 1;
  return NULL;
}

static double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char** argv) {
  if (argc < 2 || !strcmp(argv[1], "--help")) {
    fprintf(stderr, "usage: run_model MODEL.so [NAME=FILE.npy ...] [--fill V] [--threads N] [--out DIR]\n");
    return 2;
  }
  const char* out_dir = NULL;
  double fill_value = 1.0;
  int threads = 0;
  for (int a = 2; a < argc; ++a) {
    if (!strcmp(argv[a], "--fill") && a + 1 < argc) {
      fill_value = atof(argv[++a]);
    } else if (!strcmp(argv[a], "--threads") && a + 1 < argc) {
      threads = atoi(argv[++a]);
    } else if (!strcmp(argv[a], "--out") && a + 1 < argc) {
      out_dir = argv[++a];
    } else if (!strchr(argv[a], '=')) {
      fprintf(stderr, "run_model: unknown argument '%s'\n", argv[a]);
      return 2;
    }
  }

  /* dlopen needs a '/' to load a file rather than search the library path. */
  char path[4096];
  snprintf(path, sizeof path, "%s%s", strchr(argv[1], '/') ? "" : "./", argv[1]);
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "run_model: %s\n", dlerror());
    return 1;
  }
#define LOOKUP(field, name)                                                       \
  if (!(*(void**)& api.field = dlsym(lib, name))) {                               \
    fprintf(stderr, "run_model: %s: not an mlcc model (no %s)\n", argv[1], name); \
    return 1;                                                                     \
  }
  LOOKUP(load, "mlcc_model_load");
  LOOKUP(free, "mlcc_model_free");
  LOOKUP(num_inputs, "mlcc_model_num_inputs");
  LOOKUP(num_outputs, "mlcc_model_num_outputs");
  LOOKUP(input_info, "mlcc_model_input_info");
  LOOKUP(output_info, "mlcc_model_output_info");
  LOOKUP(run, "mlcc_model_run");
  LOOKUP(set_threads, "mlcc_model_set_threads");
  LOOKUP(get_threads, "mlcc_model_get_threads");
  LOOKUP(last_error, "mlcc_last_error");
  *(void**)&api.set_input_shape = dlsym(lib, "mlcc_model_set_input_shape"); /* older models lack it */

  mlcc_model* m = api.load();
  if (!m) {
    fprintf(stderr, "run_model: %s\n", api.last_error());
    return 1;
  }
  if (threads > 0 && api.set_threads(m, threads) != 0) {
    fprintf(stderr, "run_model: %s\n", api.last_error());
    return 1;
  }
  const int ni = api.num_inputs(m), no = api.num_outputs(m);
  printf("model %s: %d input(s), %d output(s), %d thread(s)\n", argv[1], ni, no, api.get_threads(m));

  int rc = 1;
  const void** inputs = calloc(ni + 1, sizeof(void*));
  void** outputs = calloc(no + 1, sizeof(void*));
  mlcc_tensor_info* in_info = calloc(ni + 1, sizeof(mlcc_tensor_info));
  mlcc_tensor_info* out_info = calloc(no + 1, sizeof(mlcc_tensor_info));
  /* Symbolic dimensions: from the .npy files, else 1. */
  for (int i = 0; i < ni && api.set_input_shape; ++i) {
    mlcc_tensor_info t;
    api.input_info(m, i, &t);
    int64_t shape[32];
    int symbolic = 0, ndim = t.ndim < 32 ? t.ndim : 32;
    for (int d = 0; d < ndim; ++d) {
      shape[d] = t.shape[d] < 0 ? 1 : t.shape[d];
      symbolic |= t.shape[d] < 0;
    }
    const char* file = inputFile(argc, argv, t.name);
    if (!symbolic || (file && (ndim = npyShape(file, shape, 32)) < 0)) continue;
    if (api.set_input_shape(m, i, ndim, shape) != 0) {
      fprintf(stderr, "run_model: %s\n", api.last_error());
      goto done;
    }
  }
  for (int i = 0; i < ni; ++i) {
    api.input_info(m, i, &in_info[i]);
    printInfo("input", i, &in_info[i]);
    void* buf =
        aligned_alloc(64, ((size_t)numel(&in_info[i]) * kDtypeBytes[in_info[i].dtype] + 63) / 64 * 64);
    inputs[i] = buf;
    const char* file = inputFile(argc, argv, in_info[i].name);
    if (file ? readNpy(file, &in_info[i], buf) != 0
             : (fill(buf, in_info[i].dtype, numel(&in_info[i]), fill_value), 0))
      goto done;
  }
  for (int i = 0; i < no; ++i) {
    api.output_info(m, i, &out_info[i]);
    printInfo("output", i, &out_info[i]);
    outputs[i] =
        aligned_alloc(64, ((size_t)numel(&out_info[i]) * kDtypeBytes[out_info[i].dtype] + 63) / 64 * 64);
  }

  double t0 = nowMs();
  if (api.run(m, inputs, outputs) != 0) {
    fprintf(stderr, "run_model: run failed: %s\n", api.last_error());
    goto done;
  }
  printf("ran in %.3f ms\n", nowMs() - t0);
  for (int i = 0; i < no; ++i) {
    const mlcc_tensor_info* t = &out_info[i];
    const int64_t n = numel(t);
    double sum = 0;
    printf("%s:", t->name);
    for (int64_t k = 0; k < n; ++k) {
      double v = elementAt(outputs[i], t->dtype, k);
      sum += v;
      if (k < 4) printf(" %.6g", v);
    }
    printf("%s  sum=%.9g\n", n > 4 ? " ..." : "", sum);
    if (out_dir && writeNpy(out_dir, t, outputs[i]) != 0) goto done;
  }
  rc = 0;
done:
  for (int i = 0; i < ni; ++i) free((void*)inputs[i]);
  for (int i = 0; i < no; ++i) free(outputs[i]);
  free(inputs);
  free(outputs);
  free(in_info);
  free(out_info);
  api.free(m);
  return rc;
}
