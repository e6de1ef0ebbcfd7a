/* cmd_devices.c: `kiln devices`: the OpenCL platforms and devices, with
 * the selectors --device accepts, and a note when NVIDIA's OpenCL library
 * is installed but not registered. */
#include "kiln_cli.h"
#include <stddef.h>

typedef struct devices_args { bool json; } devices_args;

static const kiln_cli_opt OPTS[] = {
  KILN_OPT_JSON(devices_args, json, "print one JSON object on stdout"),
};

static int cmd_devices(int argc, char **argv) {
  devices_args a = {0};
  int prc = kiln_cli_parse(&kiln_cli_cmd_devices, argc, argv, &a);
  if (prc) return kiln_cli_parse_exit(prc);
  bool json = a.json;
  kiln_device_info infos[64];
  int count = 0;
  kiln_error err = {0};
  int rc = kiln_device_list(infos, 64, &count, &err);
  if (rc) return kiln_cli__fail(&err, rc);
  if (count > 64) count = 64;
  if (json) {
    printf("{\"devices\":[");
    for (int i = 0; i < count; i++) {
      const kiln_device_info *d = &infos[i];
      printf("%s{\"selector\":\"%d:%d\",\"platform\":", i ? "," : "", d->platform_index, d->device_index);
      kiln_cli__json_str(stdout, d->platform);
      printf(",\"name\":"); kiln_cli__json_str(stdout, d->name);
      printf(",\"vendor\":"); kiln_cli__json_str(stdout, d->vendor);
      printf(",\"driver\":"); kiln_cli__json_str(stdout, d->driver);
      printf(",\"version\":"); kiln_cli__json_str(stdout, d->version);
      printf(",\"type\":\"%s\",\"compute_units\":%d,\"max_clock_mhz\":%d,\"global_mem\":%llu,\"local_mem\":%llu,"
             "\"max_alloc\":%llu,\"max_work_group\":%zu}",
             d->is_gpu ? "gpu" : "other", d->compute_units, d->max_clock_mhz, (unsigned long long)d->global_mem,
             (unsigned long long)d->local_mem, (unsigned long long)d->max_alloc, d->max_work_group);
    }
    printf("]}\n");
    return 0;
  }
  int last_plat = -1;
  for (int i = 0; i < count; i++) {
    const kiln_device_info *d = &infos[i];
    if (d->platform_index != last_plat) { printf("platform %d: %s\n", d->platform_index, d->platform); last_plat = d->platform_index; }
    printf("  device %d:%d (selector '%d' or '%d:%d'): %s\n", d->platform_index, d->device_index, i, d->platform_index, d->device_index, d->name);
    printf("    type %s, vendor %s, %s, driver %s\n", d->is_gpu ? "GPU" : "CPU/other", d->vendor, d->version, d->driver);
    printf("    %d compute units at %d MHz, global memory %.1f GiB (max allocation %.1f GiB), local memory %llu KiB, max work-group %zu\n",
           d->compute_units, d->max_clock_mhz, (double)d->global_mem / (1 << 30), (double)d->max_alloc / (1 << 30),
           (unsigned long long)(d->local_mem >> 10), d->max_work_group);
  }
  const char *lib = kiln_unregistered_gpu_driver();
  if (lib)
    printf("note: NVIDIA's OpenCL library is installed at %s but no ICD file names it, so its GPU is not listed:\n"
           "      echo %s > /etc/OpenCL/vendors/nvidia.icd (or put that file in a directory and set OCL_ICD_VENDORS to it)\n",
           lib, lib);
  return 0;
}

const kiln_cli_cmd kiln_cli_cmd_devices = {.name = "devices", .fn = cmd_devices, KILN_CLI_OPTS(OPTS),
  .summary = "list OpenCL platforms and devices"};
