// CUDA models in the runtime (abi.h's mlcc_abi_cuda): the driver loaded
// with dlopen("libcuda.so.1") at model load, so model.so has no link-time
// dependency on it and loads on machines without a GPU (where loading a
// CUDA model fails with "no CUDA driver" / "no CUDA device").
#pragma once

#include <cstdint>
#include <string>

struct mlcc_model;

namespace mlcc::rt {

struct CudaModel;
// Loads the kernels, uploads the weights and allocates the device buffers
// (device MLCC_CUDA_DEVICE, default 0); returns why it could not, or "".
std::string cudaLoad(mlcc_model* m);
// Runs the steps. With host pointers, copies the inputs in and the outputs
// out; with device pointers, uses them as they are. Returns the error, or "".
std::string cudaRun(mlcc_model* m, const void* const* inputs, void* const* outputs, bool device_pointers);
int cudaDevice(const mlcc_model* m);
// The device time of the last run (its steps, between CUDA events), or -1.
int64_t cudaLastDeviceNs(const mlcc_model* m);
void cudaFree(CudaModel* c);

}  // namespace mlcc::rt
