#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "perf_output.h"
#include "perf_tests.h"
#include "perf_memory.h"
#include "perf_upstream.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef PACKAGE_VERSION
#  define PACKAGE_VERSION "unknown"
#endif

#define PERF_MB  (1024.0 * 1024.0)
#define PERF_GB  (1024.0 * 1024.0 * 1024.0)

static const char perf_table_rule[] =
    "+------------+--------+-------------+----------------------------------+"
    "-----------------------+--------------+-------------------+"
    "-------------------------------+";

static const char *perf_output_proto(const perf_result_t *r)
{
    return (r->proto[0] != '\0') ? r->proto : "-";
}

/* Bandwidth as a percentage of the raw-copy reference; < 0: no reference. */
static double perf_output_pct_raw(const perf_result_t *r)
{
    return (r->raw_bandwidth > 0.0) ? 100.0 * r->bandwidth / r->raw_bandwidth : -1.0;
}

/* JSON has no inf or nan: a run too short to time gives 0, not an
 * unparseable document. */
static double perf_output_finite(double value)
{
    return isfinite(value) ? value : 0.0;
}

static void perf_output_json_string(FILE *stream, const char *str)
{
    const unsigned char *p;

    fputc('"', stream);
    for (p = (const unsigned char*)str; *p != '\0'; ++p) {
        if ((*p == '"') || (*p == '\\')) {
            fprintf(stream, "\\%c", *p);
        } else if (*p < 0x20) {
            fprintf(stream, "\\u%04x", *p);
        } else {
            fputc(*p, stream);
        }
    }
    fputc('"', stream);
}

static const char *perf_output_api_name(const perf_run_t *run)
{
    return perf_driver_get(run->test->api)->name;
}

void perf_output_begin(perf_output_t *out, const perf_options_t *opts, FILE *stream)
{
    out->opts          = opts;
    out->stream        = stream;
    out->rows          = 0;
    out->upstream      = NULL;
    out->upstream_text = NULL;
    out->upstream_len  = 0;

    switch (opts->format) {
    case PERF_FORMAT_CSV:
        fprintf(stream, "test,api,transport,layout,send_mem,recv_mem,size,iterations,"
                        "lat_typical_us,lat_avg_us,lat_max_us,bw_mbs,bw_gbs,msg_rate,"
                        "protocol,raw_gbs,pct_raw,send_dev,recv_dev\n");
        break;
    case PERF_FORMAT_JSON:
        fprintf(stream, "{\n  \"tool\": \"" PERF_PROGRAM_NAME "\",\n"
                        "  \"version\": \"" PACKAGE_VERSION "\",\n"
                        "  \"units\": {\"latency\": \"us\", \"bw_mbs\": \"2^20 B/s\", "
                        "\"bw_gbs\": \"2^30 B/s\", \"msg_rate\": \"msg/s\"},\n"
                        "  \"results\": [");
        break;
    case PERF_FORMAT_TABLE:
        out->upstream = open_memstream(&out->upstream_text, &out->upstream_len);
        if (out->upstream == NULL) {
            perf_print_error("no memory for upstream's rows: the table comes alone");
        }
        break;
    }
    fflush(stream);
}

/* The driver's description, one " | "-separated part per line. */
static void perf_output_table_info(FILE *s, const char *info)
{
    const char *part = info, *end;
    int first = 1;
    int len;

    while (*part != '\0') {
        end = strstr(part, " | ");
        len = (end != NULL) ? (int)(end - part) : (int)strlen(part);
        fprintf(s, "| %-13s %-123.*s |\n", first ? "Capabilities:" : "",
                (len > 123) ? 123 : len, part);
        first = 0;
        part += len + ((end != NULL) ? 3 : 0);
    }
}

/* "cuda-async on GPU 0", so that the row says where the data lives. */
static void perf_output_table_mem(FILE *s, const char *label, const perf_run_t *run,
                                  int side)
{
    char text[96];

    if (run->mem[side]->mem_type == UCS_MEMORY_TYPE_HOST) {
        snprintf(text, sizeof(text), "%s", run->params->mem_kind[side]);
    } else {
        snprintf(text, sizeof(text), "%s on GPU %u", run->params->mem_kind[side],
                 run->params->device[side]);
    }
    fprintf(s, "| %-13s %-123s |\n", label, text);
}

static void perf_output_table_header(perf_output_t *out, const perf_run_t *run)
{
    const perf_params_t *params = run->params;
    const perf_driver_t *driver = perf_driver_get(run->test->api);
    FILE *s                     = out->stream;
    const char *what;

    what = (run->test->pattern == PERF_PATTERN_PINGPONG) ? "latency" : "overhead";
    fprintf(s, "%s\n", perf_table_rule);
    fprintf(s, "| %-13s %-123s |\n", "API:", driver->description);
    fprintf(s, "| %-13s %-123s |\n", "Test:", run->test->description);
    fprintf(s, "| %-13s %-123s |\n", "Transport:", run->result.transport);
    perf_output_table_mem(s, "Send memory:", run, PERF_SIDE_SEND);
    perf_output_table_mem(s, "Recv memory:", run, PERF_SIDE_RECV);
    if (params->flags & PERF_FLAG_VALIDATE) {
        fprintf(s, "| %-13s %-123s |\n", "Validation:", "every message checked");
    }
    if (out->opts->extra_info) {
        perf_output_table_info(s, run->result.info);
    }
    fprintf(s, "%s\n", perf_table_rule);
    fprintf(s, "| %10s | %6s | %11s |         %8s (usec)          |"
               "       bandwidth       | message rate |   raw-copy ref.   |"
               " %-29s |\n", "", "", "", what, "protocol/transport");
    fprintf(s, "| %10s | %6s | %11s |  %5.1f%%ile    average        max |"
               "       MB/s       GB/s |      (msg/s) |   GB/s    %% raw  |"
               " %-29s |\n", "size", "layout", "iterations", params->percentile,
            "(what libucp chose)");
    fprintf(s, "%s\n", perf_table_rule);
}

static void perf_output_table_row(perf_output_t *out, const perf_run_t *run)
{
    const perf_result_t *r = &run->result;

    char raw[32];

    if (r->raw_bandwidth > 0.0) {
        snprintf(raw, sizeof(raw), "%8.2f %7.1f%%", r->raw_bandwidth / PERF_GB,
                 perf_output_pct_raw(r));
    } else {
        snprintf(raw, sizeof(raw), "%8s %8s", "-", "-");
    }
    fprintf(out->stream, "| %10zu | %6s | %11llu | %10.3f %10.3f %10.3f |"
                         " %10.2f %10.3f | %12.0f | %17s | %-29.29s |\n",
            run->params->msg_size, perf_layout_names[r->layout],
            (unsigned long long)r->iters, r->lat_typical * 1e6, r->lat_avg * 1e6,
            r->lat_max * 1e6, r->bandwidth / PERF_MB, r->bandwidth / PERF_GB,
            r->msg_rate, raw, perf_output_proto(r));
}

static void perf_output_csv_row(perf_output_t *out, const perf_run_t *run)
{
    const perf_params_t *p = run->params;
    const perf_result_t *r = &run->result;

    char raw[2][32] = {"", ""};

    /* No reference: empty fields, which scripts read as missing. */
    if (r->raw_bandwidth > 0.0) {
        snprintf(raw[0], sizeof(raw[0]), "%.5f", r->raw_bandwidth / PERF_GB);
        snprintf(raw[1], sizeof(raw[1]), "%.2f", perf_output_finite(perf_output_pct_raw(r)));
    }
    fprintf(out->stream, "%s,%s,%s,%s,%s,%s,%zu,%llu,%.4f,%.4f,%.4f,%.3f,%.5f,%.1f,"
            "%s,%s,%s,%u,%u\n",
            p->test_name, perf_output_api_name(run), r->transport,
            perf_layout_names[r->layout], p->mem_kind[PERF_SIDE_SEND],
            p->mem_kind[PERF_SIDE_RECV], p->msg_size, (unsigned long long)r->iters,
            perf_output_finite(r->lat_typical * 1e6), perf_output_finite(r->lat_avg * 1e6),
            perf_output_finite(r->lat_max * 1e6), perf_output_finite(r->bandwidth / PERF_MB),
            perf_output_finite(r->bandwidth / PERF_GB), perf_output_finite(r->msg_rate),
            perf_output_proto(r), raw[0], raw[1], p->device[PERF_SIDE_SEND],
            p->device[PERF_SIDE_RECV]);
}

static void perf_output_json_row(perf_output_t *out, const perf_run_t *run)
{
    const perf_params_t *p = run->params;
    const perf_result_t *r = &run->result;
    FILE *s                = out->stream;

    fprintf(s, "%s\n    {\"test\": ", (out->rows > 0) ? "," : "");
    perf_output_json_string(s, p->test_name);
    fprintf(s, ", \"api\": \"%s\", \"transport\": ", perf_output_api_name(run));
    perf_output_json_string(s, r->transport);
    fprintf(s, ", \"layout\": \"%s\", \"send_mem\": ", perf_layout_names[r->layout]);
    perf_output_json_string(s, p->mem_kind[PERF_SIDE_SEND]);
    fprintf(s, ", \"recv_mem\": ");
    perf_output_json_string(s, p->mem_kind[PERF_SIDE_RECV]);
    fprintf(s, ",\n     \"size\": %zu, \"iterations\": %llu, \"percentile\": %.1f, "
               "\"validated\": %s,\n",
            p->msg_size, (unsigned long long)r->iters, p->percentile,
            (p->flags & PERF_FLAG_VALIDATE) ? "true" : "false");
    fprintf(s, "     \"lat_typical_us\": %.4f, \"lat_avg_us\": %.4f, "
               "\"lat_max_us\": %.4f,\n",
            perf_output_finite(r->lat_typical * 1e6), perf_output_finite(r->lat_avg * 1e6),
            perf_output_finite(r->lat_max * 1e6));
    fprintf(s, "     \"bw_mbs\": %.3f, \"bw_gbs\": %.5f, \"msg_rate\": %.1f, "
               "\"elapsed_s\": %.6f",
            perf_output_finite(r->bandwidth / PERF_MB),
            perf_output_finite(r->bandwidth / PERF_GB), perf_output_finite(r->msg_rate),
            perf_output_finite(r->elapsed));
    fprintf(s, ",\n     \"protocol\": ");
    perf_output_json_string(s, perf_output_proto(r));
    fprintf(s, ", \"send_dev\": %u, \"recv_dev\": %u", p->device[PERF_SIDE_SEND],
            p->device[PERF_SIDE_RECV]);
    if (r->raw_bandwidth > 0.0) {
        fprintf(s, ", \"raw_gbs\": %.5f, \"pct_raw\": %.2f",
                perf_output_finite(r->raw_bandwidth / PERF_GB),
                perf_output_finite(perf_output_pct_raw(r)));
    } else {
        fprintf(s, ", \"raw_gbs\": null, \"pct_raw\": null");
    }
    if (r->info[0] != '\0') {
        fprintf(s, ",\n     \"info\": ");
        perf_output_json_string(s, r->info);
    }
    fprintf(s, "}");
}

static void perf_output_upstream_rows(perf_output_t *out, const perf_run_t *run)
{
    if (out->upstream == NULL) {
        return;
    }
    if (out->rows == 0) {
        perf_upstream_header(out->upstream, run->test->pattern == PERF_PATTERN_PINGPONG,
                             run->params->percentile, out->opts->final_only);
    }
    perf_upstream_rows(out->upstream, run, out->opts->final_only);
}

/* Upstream's rows after the table. A memory stream holds its text only
 * once it is closed (or flushed); a write that failed leaves it short. */
static void perf_output_upstream_flush(perf_output_t *out)
{
    if (out->upstream == NULL) {
        return;
    }
    fclose(out->upstream);
    out->upstream = NULL;
    if (out->upstream_text != NULL) {
        fwrite(out->upstream_text, 1, out->upstream_len, out->stream);
    }
    free(out->upstream_text);
    out->upstream_text = NULL;
    out->upstream_len  = 0;
}

void perf_output_result(perf_output_t *out, const perf_run_t *run)
{
    switch (out->opts->format) {
    case PERF_FORMAT_TABLE:
        if ((out->rows == 0) && !out->opts->final_only) {
            perf_output_table_header(out, run);
        }
        perf_output_table_row(out, run);
        perf_output_upstream_rows(out, run);
        break;
    case PERF_FORMAT_CSV:
        perf_output_csv_row(out, run);
        break;
    case PERF_FORMAT_JSON:
        perf_output_json_row(out, run);
        break;
    }
    ++out->rows;
    fflush(out->stream);
}

void perf_output_end(perf_output_t *out, const char *error)
{
    switch (out->opts->format) {
    case PERF_FORMAT_TABLE:
        if ((out->rows > 0) && !out->opts->final_only) {
            fprintf(out->stream, "%s\n", perf_table_rule);
        }
        perf_output_upstream_flush(out);
        break;
    case PERF_FORMAT_CSV:
        break;
    case PERF_FORMAT_JSON:
        fprintf(out->stream, "%s]", (out->rows > 0) ? "\n  " : "");
        if (error != NULL) {
            fprintf(out->stream, ",\n  \"error\": ");
            perf_output_json_string(out->stream, error);
        }
        fprintf(out->stream, "\n}\n");
        break;
    }
    fflush(out->stream);
}
