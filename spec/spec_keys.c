/*
 * The one table of spec keys, and what derives from it alone: defaults,
 * value formatting and comparison, the canonical form hashed into run ids,
 * and the key reference (`cadre keys`, docs/spec.md).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "duration.h"
#include "error.h"
#include "log.h"
#include "rundir.h"
#include "size.h"
#include "xmalloc.h"
#include "spec_int.h"

#define KIB	((int64_t)1024)
#define MIB	(KIB * 1024)
#define PIB	(MIB * 1024 * 1024 * 1024)
#define MINUTE	((int64_t)60)
#define HOUR	(60 * MINUTE)
#define DAY	(24 * HOUR)

static const char *const backends[] = { "local", "slurm", "slurm-rest", "pbs",
    NULL };
static const char *const runtimes[] = { "none", "apptainer", "singularity",
    "enroot", "charliecloud", "oci", NULL };
static const char *const launchers[] = { "mpirun", "srun", NULL };
static const char *const models[] = { "bert-tiny", "bert-mini", "bert-small",
    "bert-medium", "bert-base", "bert-large", NULL };
static const char *const tasks[] = { "pretrain", "mlm", "classify", NULL };
static const char *const precisions[] = { "fp32", "bf16", "fp16", NULL };
static const char *const optimizers[] = { "adamw", "lamb", NULL };
static const char *const schedules[] = { "linear", "poly", "constant", NULL };
static const char *const retry_reasons[] = { REASON_TIMEOUT,
    REASON_PREEMPTED, REASON_NODE_FAIL, REASON_FAILED, REASON_STARTUP_TIMEOUT,
    REASON_IO, NULL };
static const char *const keep_timed[] = { "all", "at", "none", NULL };
static const char *const notify_events[] = { REASON_DONE, REASON_FAILED,
    "requeued", REASON_CANCELLED, NULL };
static const char *const launches[] = { PROGRAM_LAUNCH_PER_RANK,
    PROGRAM_LAUNCH_PER_NODE, PROGRAM_LAUNCH_ONCE, NULL };
static const char *const signals[] = { "SIGUSR1", "SIGUSR2", "SIGTERM",
    "SIGINT", "SIGHUP", NULL };

/* Google's BERT miniatures and the two original sizes. */
static const struct {
	const char		*name;
	struct spec_model_dims	 dims;
} presets[] = {
	{ "bert-tiny",   {  2,  128,  2,  512, 30522, 512 } },
	{ "bert-mini",   {  4,  256,  4, 1024, 30522, 512 } },
	{ "bert-small",  {  4,  512,  8, 2048, 30522, 512 } },
	{ "bert-medium", {  8,  512,  8, 2048, 30522, 512 } },
	{ "bert-base",   { 12,  768, 12, 3072, 30522, 512 } },
	{ "bert-large",  { 24, 1024, 16, 4096, 30522, 512 } },
};

#define R	SPEC_F_REQUIRED
#define M	SPEC_F_MATRIX
#define N	SPEC_F_NOID
#define INT(lo, hi)	.min = (lo), .max = (hi)
#define NUM(lo, hi)	.fmin = (lo), .fmax = (hi)

static const struct spec_key_info keys[SPEC_KEY_COUNT] = {
	[SPEC_K_VERSION] = { "version", SPEC_T_INT, R, INT(1, 1),
	    .doc = "Spec language version; this cadre reads version 1." },
	[SPEC_K_NAME] = { "name", SPEC_T_NAME, R,
	    .doc = "Experiment name; goes into job names and run directories." },
	[SPEC_K_DESCRIPTION] = { "description", SPEC_T_TEXT, N,
	    INT(0, SPEC_MAX_TEXT),
	    .doc = "Free text, shown in reports." },
	[SPEC_K_AFTER] = { "after", SPEC_T_WORDS, N, INT(0, 16),
	    .doc = "Experiments (names or ids) every run of which must be done "
	    "before this one's runs start." },
	[SPEC_K_ENV] = { "env", SPEC_T_ENVS, 0, INT(0, SPEC_MAX_LIST),
	    .doc = "Environment of every run's job, agents and ranks, NAME: value; CADRE_* names are cadre's own." },
	[SPEC_K_SETUP] = { "setup", SPEC_T_TEXTS, 0, INT(0, SPEC_MAX_LIST),
	    .doc = "Shell commands run on every node before its agent starts (module load ...); what they export reaches the ranks." },

	[SPEC_K_SCHED_BACKEND] = { "scheduler.backend", SPEC_T_ENUM, 0,
	    .values = backends, .def = "local",
	    .doc = "Where runs go: this machine, sbatch, slurmrestd or qsub." },
	[SPEC_K_SCHED_PARTITION] = { "scheduler.partition", SPEC_T_WORD, 0,
	    .doc = "Slurm partition or PBS queue; unset: the scheduler's default." },
	[SPEC_K_SCHED_ACCOUNT] = { "scheduler.account", SPEC_T_WORD, 0,
	    .doc = "Account (project) the jobs are charged to." },
	[SPEC_K_SCHED_QOS] = { "scheduler.qos", SPEC_T_WORD, 0,
	    .doc = "Slurm quality of service." },
	[SPEC_K_SCHED_TIME_LIMIT] = { "scheduler.time_limit", SPEC_T_DURATION,
	    M, INT(MINUTE, 365 * DAY), .def = "1h",
	    .doc = "Wall-clock limit of each run's job." },
	[SPEC_K_SCHED_SIGNAL_GRACE] = { "scheduler.signal_grace",
	    SPEC_T_DURATION, 0, INT(0, DAY), .def = "120s",
	    .doc = "The job gets SIGUSR1 this long before its time limit, to checkpoint." },
	[SPEC_K_SCHED_MAX_CONCURRENT] = { "scheduler.max_concurrent",
	    SPEC_T_INT, N, INT(0, 100000), .def = "0",
	    .doc = "At most this many runs queued or running at once; 0: no limit." },
	[SPEC_K_SCHED_EXTRA] = { "scheduler.extra", SPEC_T_WORDS, 0,
	    INT(0, SPEC_MAX_LIST),
	    .doc = "Extra sbatch or qsub arguments, one word each, passed as they are." },
	[SPEC_K_SCHED_SRUN_EXTRA] = { "scheduler.srun_extra", SPEC_T_WORDS, 0,
	    INT(0, SPEC_MAX_LIST),
	    .doc = "Extra srun arguments for the job's steps (the agents; the ranks with launcher srun)." },
	[SPEC_K_SCHED_CONSTRAINT] = { "scheduler.constraint", SPEC_T_WORD, 0,
	    .doc = "Slurm node features the job needs, e.g. \"a100&ib\"." },
	[SPEC_K_SCHED_RESERVATION] = { "scheduler.reservation", SPEC_T_WORD, 0,
	    .doc = "Slurm reservation the jobs run in." },
	[SPEC_K_SCHED_REST_URL] = { "scheduler.rest.url", SPEC_T_URL, N,
	    .doc = "slurmrestd address, http(s)://HOST:PORT or unix:///PATH; needed by slurm-rest." },
	[SPEC_K_SCHED_REST_TOKEN_ENV] = { "scheduler.rest.token_env",
	    SPEC_T_ENV, N, .def = "SLURM_JWT",
	    .doc = "Environment variable of cadred that holds the slurmrestd token." },

	[SPEC_K_RES_NODES] = { "resources.nodes", SPEC_T_INT, M,
	    INT(1, 4096), .def = "1",
	    .doc = "Nodes per run." },
	[SPEC_K_RES_GPUS_PER_NODE] = { "resources.gpus_per_node", SPEC_T_INT,
	    M, INT(0, 16), .def = "0",
	    .doc = "GPUs per node; 0: a CPU run." },
	[SPEC_K_RES_RANKS_PER_NODE] = { "resources.ranks_per_node",
	    SPEC_T_INT, M, INT(0, 1024), .def = "0",
	    .doc = "Trainer processes per node; 0: one per GPU, or 1 on CPU." },
	[SPEC_K_RES_CPUS_PER_RANK] = { "resources.cpus_per_rank", SPEC_T_INT,
	    M, INT(0, 1024), .def = "0",
	    .doc = "CPU cores per rank; 0: the scheduler's default." },
	[SPEC_K_RES_MEMORY] = { "resources.memory", SPEC_T_SIZE, M,
	    INT(MIB, PIB),
	    .doc = "Memory per node, e.g. 64G; unset: the scheduler's default." },
	[SPEC_K_RES_GPU_TYPE] = { "resources.gpu_type", SPEC_T_WORD, M,
	    .doc = "GPU model asked of the scheduler, e.g. a100; unset: any." },
	[SPEC_K_RES_EXCLUSIVE] = { "resources.exclusive", SPEC_T_BOOL, 0,
	    .def = "false",
	    .doc = "Whole nodes, shared with no other job (sbatch --exclusive, PBS place=excl)." },

	[SPEC_K_CONTAINER_RUNTIME] = { "container.runtime", SPEC_T_ENUM, 0,
	    .values = runtimes, .def = "none",
	    .doc = "Run the agent and trainer in a container, or not." },
	[SPEC_K_CONTAINER_IMAGE] = { "container.image", SPEC_T_PATH, 0,
	    .doc = "Image: a file (apptainer, singularity), a directory or SquashFS file (charliecloud), a bundle or root file system (oci); required unless runtime is none." },
	[SPEC_K_CONTAINER_BINDS] = { "container.binds", SPEC_T_PATHS, 0,
	    INT(0, SPEC_MAX_LIST),
	    .doc = "Extra host paths bound into the container (the run directory and the data always are)." },

	[SPEC_K_AGENT_PORT] = { "agent.port", SPEC_T_INT, 0, INT(0, 65535),
	    .def = "0",
	    .doc = "TCP port of the per-node agent; 0: any free port." },
	[SPEC_K_AGENT_STARTUP_TIMEOUT] = { "agent.startup_timeout",
	    SPEC_T_DURATION, 0, INT(1, DAY), .def = "180s",
	    .doc = "How long the head node waits for every agent to answer." },

	[SPEC_K_LAUNCHER] = { "launcher", SPEC_T_ENUM, M, .values = launchers,
	    .def = "mpirun",
	    .doc = "What starts the ranks: Open MPI's mpirun over the agents, or srun (Slurm only)." },
	[SPEC_K_STAGE_TO] = { "stage.to", SPEC_T_PATH, 0,
	    .doc = "Copy trainer.data (a program: stage.from) to this node-local directory on every node first (checked by SHA-256); the trainer reads the copy." },
	[SPEC_K_STAGE_FROM] = { "stage.from", SPEC_T_PATH, 0,
	    .doc = "A program's data to copy to stage.to on every node first; the program reads the copy there (the trainer stages trainer.data)." },

	[SPEC_K_MODEL] = { "trainer.model", SPEC_T_MODEL, M, .values = models,
	    .def = "bert-base",
	    .doc = "A preset, or a mapping of the trainer.model.* dimensions." },
	[SPEC_K_MODEL_LAYERS] = { "trainer.model.layers", SPEC_T_INT, R,
	    INT(1, 256),
	    .doc = "Transformer layers (explicit model)." },
	[SPEC_K_MODEL_HIDDEN] = { "trainer.model.hidden", SPEC_T_INT, R,
	    INT(1, 65536),
	    .doc = "Hidden size, a multiple of heads (explicit model)." },
	[SPEC_K_MODEL_HEADS] = { "trainer.model.heads", SPEC_T_INT, R,
	    INT(1, 1024),
	    .doc = "Attention heads (explicit model)." },
	[SPEC_K_MODEL_INTERMEDIATE] = { "trainer.model.intermediate",
	    SPEC_T_INT, 0, INT(0, 262144), .def = "0",
	    .doc = "Feed-forward size; 0: 4 x hidden (explicit model)." },
	[SPEC_K_MODEL_VOCAB_SIZE] = { "trainer.model.vocab_size", SPEC_T_INT,
	    0, INT(2, 10000000), .def = "30522",
	    .doc = "Vocabulary size (explicit model)." },
	[SPEC_K_MODEL_MAX_POSITION] = { "trainer.model.max_position",
	    SPEC_T_INT, 0, INT(1, 1048576), .def = "512",
	    .doc = "Longest sequence the position embeddings cover (explicit model)." },

	[SPEC_K_TASK] = { "trainer.task", SPEC_T_ENUM, M, .values = tasks,
	    .def = "pretrain",
	    .doc = "pretrain: masked LM and next sentence; mlm: masked LM only; classify: sequence classification." },
	[SPEC_K_DATA] = { "trainer.data", SPEC_T_PATH, R,
	    .doc = "Training shards, a directory made by cadre-train prep." },
	[SPEC_K_EVAL_DATA] = { "trainer.eval_data", SPEC_T_PATH, 0,
	    .doc = "Evaluation shards; unset: no evaluation." },
	[SPEC_K_VOCAB] = { "trainer.vocab", SPEC_T_PATH, 0,
	    .doc = "WordPiece vocabulary file; unset: the one stored with the shards." },
	[SPEC_K_INIT] = { "trainer.init", SPEC_T_PATH, 0,
	    .doc = "Checkpoint directory to start from (Hugging Face's save_pretrained, safetensors; its config.json decides the model); unset: random weights. Or a mapping of from, config and at: another experiment's checkpoint." },
	[SPEC_K_INIT_FROM] = { "trainer.init.from", SPEC_T_NAME, 0,
	    .doc = "Start from a checkpoint of this experiment (name or id); its runs must be done first." },
	[SPEC_K_INIT_CONFIG] = { "trainer.init.config", SPEC_T_NAME, 0,
	    .doc = "Which configuration of trainer.init.from (its config id, or a unique start); unset: its only one." },
	[SPEC_K_INIT_AT] = { "trainer.init.at", SPEC_T_TEXT, 0,
	    INT(1, 64), .def = "final",
	    .doc = "Its final checkpoint, or the timed one at this training time (20m)." },
	[SPEC_K_SEQ_LEN] = { "trainer.seq_len", SPEC_T_INT, M, INT(8, 65536),
	    .def = "128",
	    .doc = "Tokens per sequence." },
	[SPEC_K_BATCH_SIZE] = { "trainer.batch_size", SPEC_T_INT, M,
	    INT(1, 1048576), .def = "32",
	    .doc = "Sequences per rank per micro-step." },
	[SPEC_K_GRAD_ACCUM] = { "trainer.grad_accum", SPEC_T_INT, M,
	    INT(1, 65536), .def = "1",
	    .doc = "Micro-steps accumulated per optimizer step." },
	[SPEC_K_STEPS] = { "trainer.steps", SPEC_T_INT, M,
	    INT(1, 1000000000), .def = "1000",
	    .doc = "Optimizer steps to train." },
	[SPEC_K_PRECISION] = { "trainer.precision", SPEC_T_ENUM, M,
	    .values = precisions, .def = "fp32",
	    .doc = "Arithmetic: fp32, or bf16/fp16 mixed precision (GPU only)." },
	[SPEC_K_OPT_NAME] = { "trainer.optimizer.name", SPEC_T_ENUM, M,
	    .values = optimizers, .def = "adamw",
	    .doc = "Optimizer." },
	[SPEC_K_OPT_LR] = { "trainer.optimizer.lr", SPEC_T_FLOAT,
	    M | SPEC_F_MIN_OPEN, NUM(0, 10), .def = "1e-4",
	    .doc = "Peak learning rate." },
	[SPEC_K_OPT_WEIGHT_DECAY] = { "trainer.optimizer.weight_decay",
	    SPEC_T_FLOAT, M, NUM(0, 1), .def = "0.01",
	    .doc = "Decoupled weight decay." },
	[SPEC_K_OPT_BETA1] = { "trainer.optimizer.beta1", SPEC_T_FLOAT,
	    M | SPEC_F_MAX_OPEN, NUM(0, 1), .def = "0.9",
	    .doc = "First moment decay." },
	[SPEC_K_OPT_BETA2] = { "trainer.optimizer.beta2", SPEC_T_FLOAT,
	    M | SPEC_F_MAX_OPEN, NUM(0, 1), .def = "0.999",
	    .doc = "Second moment decay." },
	[SPEC_K_OPT_EPS] = { "trainer.optimizer.eps", SPEC_T_FLOAT,
	    M | SPEC_F_MIN_OPEN, NUM(0, 1), .def = "1e-6",
	    .doc = "Denominator epsilon." },
	[SPEC_K_OPT_WARMUP] = { "trainer.optimizer.warmup", SPEC_T_FLOAT, M,
	    NUM(0, 1), .def = "0.01",
	    .doc = "Fraction of the steps spent warming the learning rate up." },
	[SPEC_K_OPT_SCHEDULE] = { "trainer.optimizer.schedule", SPEC_T_ENUM,
	    M, .values = schedules, .def = "linear",
	    .doc = "Learning rate decay after warm-up." },
	[SPEC_K_OPT_POWER] = { "trainer.optimizer.power", SPEC_T_FLOAT,
	    M | SPEC_F_MIN_OPEN, NUM(0, 100), .def = "1",
	    .doc = "Exponent of the poly schedule." },
	[SPEC_K_GRAD_CLIP] = { "trainer.grad_clip", SPEC_T_FLOAT, M,
	    NUM(0, 1e6), .def = "1",
	    .doc = "Clip the global gradient norm to this; 0: no clipping." },
	[SPEC_K_GRAD_CHECKPOINTING] = { "trainer.grad_checkpointing",
	    SPEC_T_BOOL, M, .def = "false",
	    .doc = "Recompute activations in the backward pass to save memory." },
	[SPEC_K_DROPOUT] = { "trainer.dropout", SPEC_T_FLOAT,
	    M | SPEC_F_MAX_OPEN, NUM(0, 1), .def = "0.1",
	    .doc = "Dropout probability." },
	[SPEC_K_CHECKPOINT_EVERY] = { "trainer.checkpoint_every",
	    SPEC_T_DURATION, M, INT(0, 365 * DAY), .def = "20m",
	    .doc = "Save a checkpoint this often (and on SIGUSR1/SIGTERM); 0: only at the end." },
	[SPEC_K_KEEP_CHECKPOINTS] = { "trainer.keep_checkpoints", SPEC_T_INT,
	    0, INT(1, 10000), .def = "2",
	    .doc = "Newest checkpoints kept; older ones are deleted." },
	[SPEC_K_KEEP_TIMED] = { "trainer.keep_timed", SPEC_T_ENUM, N,
	    .values = keep_timed, .def = "all",
	    .doc = "Timed checkpoints (at multiples of checkpoint_every) once the run is done: all kept, only those at eval.at, or none beyond keep_checkpoints." },
	[SPEC_K_LOG_EVERY] = { "trainer.log_every", SPEC_T_INT, 0,
	    INT(1, 1000000000), .def = "10",
	    .doc = "Steps between metrics lines." },
	[SPEC_K_SEED] = { "trainer.seed", SPEC_T_INT, M, INT(0, 4294967295LL),
	    .def = "42",
	    .doc = "Random seed; every repeat of a configuration uses the same one." },

	[SPEC_K_PROG_COMMAND] = { "program.command", SPEC_T_COMMAND, R,
	    INT(1, SPEC_MAX_LIST),
	    .doc = "Your own program instead of the trainer: a list of words (no shell), or a string run by sh -c; {name} is a value of the run; other braces stay as written." },
	[SPEC_K_PROG_LAUNCH] = { "program.launch", SPEC_T_ENUM, M,
	    .values = launches, .def = PROGRAM_LAUNCH_PER_RANK,
	    .doc = "Copies started: one per rank, one per node (a launcher such as torchrun), or once on the head node." },
	[SPEC_K_PROG_WORKDIR] = { "program.workdir", SPEC_T_PATH, 0,
	    .def = ".",
	    .doc = "Directory the program and setup start in; a relative path is relative to the spec's directory." },
	[SPEC_K_PROG_ENV] = { "program.env", SPEC_T_ENVS, 0,
	    INT(0, SPEC_MAX_LIST),
	    .doc = "Environment of the program and setup, NAME: value; CADRE_* names are cadre's own." },
	[SPEC_K_PROG_VARS] = { "program.vars", SPEC_T_VARS,
	    SPEC_F_MATRIX_NAMES, INT(0, SPEC_MAX_LIST),
	    .doc = "Values for {NAME} in command and setup, NAME: value; matrix and include vary them as program.vars.NAME." },
	[SPEC_K_PROG_SIGNAL] = { "program.signal", SPEC_T_ENUM, 0,
	    .values = signals, .def = "SIGUSR1",
	    .doc = "The signal that asks the program to checkpoint now (timed, and before the time limit)." },
	[SPEC_K_PROG_CHECKPOINT_EVERY] = { "program.checkpoint_every",
	    SPEC_T_DURATION, 0, INT(0, 365 * DAY), .def = "0",
	    .doc = "Ask for a checkpoint (program.signal) this often; 0: only before the time limit." },
	[SPEC_K_PROG_KEEP_CHECKPOINTS] = { "program.keep_checkpoints",
	    SPEC_T_INT, 0, INT(0, 10000), .def = "2",
	    .doc = "Newest checkpoints kept in {checkpoint_dir}; older ones are deleted; 0: all are kept." },
	[SPEC_K_PROG_METRICS_REGEX] = { "program.metrics.regex", SPEC_T_REGEX,
	    0, INT(1, SPEC_MAX_TEXT),
	    .doc = "Output lines that are metrics: a PCRE2 pattern with named groups, step required, and loss, samples_per_s, samples, elapsed_s, accuracy." },
	[SPEC_K_PROG_SETUP] = { "program.setup", SPEC_T_TEXTS, 0,
	    INT(0, SPEC_MAX_LIST),
	    .doc = "Commands run by sh -c once on every node before the program, in order; {name} as in command." },

	[SPEC_K_MEASURE_SKIP_STEPS] = { "measure.skip_steps", SPEC_T_INT, M,
	    INT(0, 1000000000), .def = "100",
	    .doc = "Warm-up steps left out of throughput figures." },

	[SPEC_K_CKPT_EVAL_DATA] = { "eval.data", SPEC_T_PATH, N,
	    .doc = "Held-out shards each timed checkpoint is evaluated on after training (cadre-train eval --run-dir); unset: none evaluated." },
	[SPEC_K_CKPT_EVAL_BATCH] = { "eval.batch_size", SPEC_T_INT, N,
	    INT(1, 65536), .def = "32",
	    .doc = "Sequences per rank per evaluation batch." },
	[SPEC_K_CKPT_EVAL_AT] = { "eval.at", SPEC_T_DURATIONS, N,
	    INT(0, SPEC_MAX_LIST),
	    .doc = "Training times whose checkpoints are evaluated (multiples of trainer.checkpoint_every), e.g. [20m, 40m]; unset: every timed one." },

	[SPEC_K_REPEATS] = { "repeats", SPEC_T_INT, 0, INT(1, 1000),
	    .def = "1",
	    .doc = "Runs of each configuration." },
	[SPEC_K_MATRIX] = { "matrix", SPEC_T_MATRIX, 0,
	    .doc = "Dotted key -> list of values; runs are the cartesian product." },
	[SPEC_K_EXCLUDE] = { "exclude", SPEC_T_EXCLUDE, 0,
	    .doc = "Entries {dotted key: value}; matrix configurations matching one are dropped." },
	[SPEC_K_INCLUDE] = { "include", SPEC_T_INCLUDE, 0,
	    .doc = "Entries {dotted key: value}; each adds one configuration." },

	[SPEC_K_RETRIES_MAX] = { "retries.max", SPEC_T_INT, N, INT(0, 100),
	    .def = "3",
	    .doc = "Resubmissions of a run that failed for a reason in retries.on." },
	[SPEC_K_RETRIES_ON] = { "retries.on", SPEC_T_ENUMS, N,
	    INT(0, SPEC_MAX_LIST), .values = retry_reasons,
	    .def = "timeout,preempted,node_fail",
	    .doc = "Exit reasons worth a retry (a timed-out run resumes from its checkpoint)." },
	[SPEC_K_RETRIES_BACKOFF] = { "retries.backoff", SPEC_T_DURATION, N,
	    INT(0, DAY), .def = "1m",
	    .doc = "Wait before resubmitting." },

	[SPEC_K_NOTIFY_WEBHOOK] = { "notify.webhook", SPEC_T_URL, N,
	    .doc = "URL that gets a JSON POST on the events in notify.on." },
	[SPEC_K_NOTIFY_ON] = { "notify.on", SPEC_T_ENUMS, N,
	    INT(0, SPEC_MAX_LIST), .values = notify_events,
	    .def = "done,failed",
	    .doc = "Run events that are notified." },

	[SPEC_K_REPORT_BASELINE] = { "report.baseline", SPEC_T_ASSIGN, N,
	    .doc = "{dotted key: value} of the configuration speedups are relative to." },
};

#undef R
#undef M
#undef N
#undef INT
#undef NUM

const struct spec_key_info *
spec_key_info(enum spec_key k)
{
	if ((unsigned)k >= SPEC_KEY_COUNT)
		fatalx("spec_key_info: bad key %d", (int)k);
	return &keys[k];
}

const char *
spec_key_leaf(enum spec_key k)
{
	const char	*path = spec_key_info(k)->path, *dot = strrchr(path, '.');

	return dot != NULL ? dot + 1 : path;
}

int
spec_key_lookup(const char *path)
{
	int	k;

	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		if (strcmp(keys[k].path, path) == 0)
			return k;
	}
	return -1;
}

const char *
spec_type_name(enum spec_type t)
{
	switch (t) {
	case SPEC_T_INT:
		return "integer";
	case SPEC_T_FLOAT:
		return "number";
	case SPEC_T_BOOL:
		return "boolean";
	case SPEC_T_TEXT:
		return "text";
	case SPEC_T_NAME:
		return "name";
	case SPEC_T_ENUM:
		return "enum";
	case SPEC_T_DURATION:
		return "duration";
	case SPEC_T_SIZE:
		return "size";
	case SPEC_T_PATH:
		return "path";
	case SPEC_T_WORD:
		return "word";
	case SPEC_T_ENV:
		return "variable name";
	case SPEC_T_URL:
		return "URL";
	case SPEC_T_WORDS:
		return "list of words";
	case SPEC_T_PATHS:
		return "list of paths";
	case SPEC_T_ENUMS:
		return "list of enums";
	case SPEC_T_DURATIONS:
		return "list of durations";
	case SPEC_T_MODEL:
		return "model";
	case SPEC_T_MATRIX:
		return "mapping";
	case SPEC_T_EXCLUDE:
	case SPEC_T_INCLUDE:
		return "list of entries";
	case SPEC_T_ASSIGN:
		return "entry";
	case SPEC_T_COMMAND:
		return "command";
	case SPEC_T_TEXTS:
		return "list of strings";
	case SPEC_T_VARS:
	case SPEC_T_ENVS:
		return "mapping";
	case SPEC_T_REGEX:
		return "regex";
	}
	return "?";
}

int
spec_model_preset(const char *name, struct spec_model_dims *m)
{
	size_t	i;

	for (i = 0; i < sizeof presets / sizeof presets[0]; i++) {
		if (strcmp(presets[i].name, name) == 0) {
			*m = presets[i].dims;
			return 0;
		}
	}
	return CADRE_ERR_NOT_FOUND;
}

/* ------------------------------------------------------------ values */

void
spec_value_free(struct spec_value *v)
{
	size_t	i;

	free(v->s);
	if (v->list != NULL) {
		for (i = 0; i < v->n; i++)
			free(v->list[i]);
		free(v->list);
	}
	memset(v, 0, sizeof *v);
}

void
spec_value_copy(struct spec_value *dst, const struct spec_value *src)
{
	size_t	i;

	*dst = *src;
	if (src->s != NULL)
		dst->s = xstrdup(src->s);
	if (src->list != NULL) {
		dst->list = xreallocarray(NULL, src->n + 1, sizeof *dst->list);
		for (i = 0; i < src->n; i++)
			dst->list[i] = xstrdup(src->list[i]);
		dst->list[src->n] = NULL;
	}
}

static int
is_string_type(enum spec_type t)
{
	return t == SPEC_T_TEXT || t == SPEC_T_NAME || t == SPEC_T_PATH ||
	    t == SPEC_T_WORD || t == SPEC_T_ENV || t == SPEC_T_URL ||
	    t == SPEC_T_ENUM || t == SPEC_T_MODEL || t == SPEC_T_REGEX;
}

int
spec_type_is_list(enum spec_type t)
{
	return t == SPEC_T_WORDS || t == SPEC_T_PATHS || t == SPEC_T_ENUMS ||
	    t == SPEC_T_DURATIONS || t == SPEC_T_TEXTS;
}

int
spec_type_is_pairs(enum spec_type t)
{
	return t == SPEC_T_VARS || t == SPEC_T_ENVS;
}

/* Types whose values have a string, a list, or either (see spec_int.h). */
static int
is_either_type(enum spec_type t)
{
	return t == SPEC_T_COMMAND || spec_type_is_pairs(t);
}

const char *
spec_pairs_get(const struct spec_value *v, const char *name)
{
	size_t	i;

	for (i = 0; v->list != NULL && i + 1 < v->n; i += 2) {
		if (strcmp(v->list[i], name) == 0)
			return v->list[i + 1];
	}
	return NULL;
}

void
spec_pairs_set(struct spec_value *v, const char *name, const char *text)
{
	size_t	i, j;
	int	c = 1;

	for (i = 0; v->list != NULL && i + 1 < v->n; i += 2) {
		if ((c = strcmp(v->list[i], name)) >= 0)
			break;
	}
	if (c == 0) {
		free(v->list[i + 1]);
		v->list[i + 1] = xstrdup(text);
		return;
	}
	v->list = xreallocarray(v->list, v->n + 3, sizeof *v->list);
	for (j = v->n; j > i; j--)
		v->list[j + 1] = v->list[j - 1];
	v->list[i] = xstrdup(name);
	v->list[i + 1] = xstrdup(text);
	v->n += 2;
	v->list[v->n] = NULL;
	v->set = 1;
}

static int
list_equal(const struct spec_value *a, const struct spec_value *b)
{
	size_t	i;

	if (a->n != b->n)
		return 0;
	for (i = 0; i < a->n; i++) {
		if (strcmp(a->list[i], b->list[i]) != 0)
			return 0;
	}
	return 1;
}

int
spec_value_equal(enum spec_key k, const struct spec_value *a,
    const struct spec_value *b)
{
	enum spec_type	t = keys[k].type;

	if (a->set != b->set)
		return 0;
	if (!a->set)
		return 1;
	if (is_string_type(t))
		return strcmp(a->s, b->s) == 0;
	if (spec_type_is_list(t))
		return list_equal(a, b);
	if (is_either_type(t)) {
		if ((a->s == NULL) != (b->s == NULL))
			return 0;
		if (a->s != NULL)
			return strcmp(a->s, b->s) == 0;
		return list_equal(a, b);
	}
	if (t == SPEC_T_FLOAT)
		return a->f == b->f;
	return a->i == b->i;
}

static void
format_float(double f, char *buf, size_t len)
{
	/* 15 significant digits print what was written: 6e-3 as 0.006. */
	snprintf(buf, len, "%.15g", f);
}

char *
spec_value_format(enum spec_key k, const struct spec_value *v)
{
	enum spec_type	t = keys[k].type;
	struct cbuf	b;
	char		buf[64];
	size_t		i;

	if (!v->set)
		return xstrdup("");
	if (is_string_type(t) || (is_either_type(t) && v->s != NULL))
		return xstrdup(v->s);
	if (is_either_type(t)) {
		/* words by spaces; pairs as NAME=VALUE, ... */
		cbuf_init(&b, SIZE_MAX);
		for (i = 0; i < v->n; i++)
			cbuf_addf(&b, "%s%s", i == 0 ? "" : t == SPEC_T_COMMAND ?
			    " " : i % 2 == 1 ? "=" : ", ", v->list[i]);
		return cbuf_detach(&b, NULL);
	}
	switch (t) {
	case SPEC_T_INT:
		snprintf(buf, sizeof buf, "%" PRId64, v->i);
		break;
	case SPEC_T_BOOL:
		snprintf(buf, sizeof buf, "%s", v->i ? "true" : "false");
		break;
	case SPEC_T_FLOAT:
		format_float(v->f, buf, sizeof buf);
		break;
	case SPEC_T_DURATION:
		duration_format(v->i, buf, sizeof buf);
		break;
	case SPEC_T_SIZE:
		size_format(v->i, buf, sizeof buf);
		break;
	default:
		if (!spec_type_is_list(t))
			return xstrdup("");
		cbuf_init(&b, SIZE_MAX);
		for (i = 0; i < v->n; i++) {
			if (i > 0)
				cbuf_adds(&b, ", ");
			if (t == SPEC_T_DURATIONS) {
				duration_format(strtoll(v->list[i], NULL, 10),
				    buf, sizeof buf);
				cbuf_adds(&b, buf);
			} else
				cbuf_adds(&b, v->list[i]);
		}
		return cbuf_detach(&b, NULL);
	}
	return xstrdup(buf);
}

static void
canon_str(struct cbuf *b, const char *s)
{
	cbuf_addf(b, "%zu:", strlen(s));
	cbuf_adds(b, s);
}

/*
 * "path=VALUE\n": strings length-prefixed, so that no two different sets
 * of values serialize alike; numbers in one form (durations in seconds,
 * sizes in bytes, floats with all 17 digits); a list as its length and the
 * SHA-256 of its length-prefixed items, which keeps the entry short.
 */
void
spec_value_canon(enum spec_key k, const struct spec_value *v, struct cbuf *b)
{
	enum spec_type		t = keys[k].type;
	struct sha256_ctx	c;
	uint8_t			dg[SHA256_DIGEST_LEN];
	char			hex[2 * SHA256_DIGEST_LEN + 1], len[32];
	size_t			i;

	cbuf_addf(b, "%s=", keys[k].path);
	if (!v->set)
		cbuf_addc(b, '~');
	else if (is_string_type(t) || (is_either_type(t) && v->s != NULL))
		canon_str(b, v->s);
	else if (spec_type_is_list(t) || is_either_type(t)) {
		sha256_init(&c);
		for (i = 0; i < v->n; i++) {
			snprintf(len, sizeof len, "%zu:", strlen(v->list[i]));
			sha256_update(&c, len, strlen(len));
			sha256_update(&c, v->list[i], strlen(v->list[i]));
		}
		sha256_final(&c, dg);
		sha256_hex(dg, SHA256_DIGEST_LEN, hex);
		cbuf_addf(b, "[%zu]%s", v->n, hex);
	} else if (t == SPEC_T_FLOAT)
		cbuf_addf(b, "%.17g", v->f);
	else
		cbuf_addf(b, "%" PRId64, v->i);
	cbuf_addc(b, '\n');
}

/* ------------------------------------------------------------ reference */

/* Appends a range bound of an integer-valued type in its own units. */
void
spec_add_bound(struct cbuf *b, enum spec_type t, int64_t v)
{
	char	buf[64];

	if (t == SPEC_T_DURATION)
		duration_format(v, buf, sizeof buf);
	else if (t == SPEC_T_SIZE)
		size_format(v, buf, sizeof buf);
	else
		snprintf(buf, sizeof buf, "%" PRId64, v);
	cbuf_adds(b, buf);
}

char *
spec_key_range_text(enum spec_key k)
{
	const struct spec_key_info	*ki = spec_key_info(k);
	struct cbuf			 b;
	char				 buf[64];
	size_t				 i;

	cbuf_init(&b, SIZE_MAX);
	switch (ki->type) {
	case SPEC_T_DURATIONS:
		cbuf_addf(&b, "up to %" PRId64 " durations", ki->max);
		break;
	case SPEC_T_INT:
	case SPEC_T_DURATION:
	case SPEC_T_SIZE:
		spec_add_bound(&b, ki->type, ki->min);
		if (ki->min == ki->max)
			break;
		cbuf_adds(&b, "..");
		spec_add_bound(&b, ki->type, ki->max);
		break;
	case SPEC_T_FLOAT:
		format_float(ki->fmin, buf, sizeof buf);
		cbuf_addf(&b, "%s%s, ", ki->flags & SPEC_F_MIN_OPEN ? "(" : "[",
		    buf);
		format_float(ki->fmax, buf, sizeof buf);
		cbuf_addf(&b, "%s%s", buf,
		    ki->flags & SPEC_F_MAX_OPEN ? ")" : "]");
		break;
	case SPEC_T_BOOL:
		cbuf_adds(&b, "true, false");
		break;
	case SPEC_T_ENUM:
	case SPEC_T_ENUMS:
	case SPEC_T_MODEL:
		for (i = 0; ki->values[i] != NULL; i++)
			cbuf_addf(&b, "%s%s", i > 0 ? ", " : "", ki->values[i]);
		if (ki->type == SPEC_T_MODEL)
			cbuf_adds(&b, ", or a mapping");
		break;
	case SPEC_T_NAME:
		cbuf_adds(&b, "1-64 of A-Z a-z 0-9 . _ -");
		break;
	case SPEC_T_TEXT:
		cbuf_addf(&b, "up to %" PRId64 " bytes", ki->max);
		break;
	case SPEC_T_PATH:
	case SPEC_T_PATHS:
		cbuf_addf(&b, "paths up to %d bytes", SPEC_MAX_PATH);
		break;
	case SPEC_T_WORD:
	case SPEC_T_WORDS:
		cbuf_addf(&b, "printable, up to %d bytes", SPEC_MAX_WORD);
		break;
	case SPEC_T_ENV:
		cbuf_adds(&b, "A-Z a-z 0-9 _, not starting with a digit");
		break;
	case SPEC_T_URL:
		cbuf_adds(&b, "http://, https:// or unix:///");
		break;
	case SPEC_T_COMMAND:
		cbuf_addf(&b, "1..%" PRId64 " words, or a string; up to %d "
		    "bytes each", ki->max, SPEC_MAX_TEXT);
		break;
	case SPEC_T_TEXTS:
		cbuf_addf(&b, "up to %" PRId64 " strings of up to %d bytes",
		    ki->max, SPEC_MAX_TEXT);
		break;
	case SPEC_T_VARS:
		cbuf_addf(&b, "up to %" PRId64 " names of A-Z a-z 0-9 _, not "
		    "the built-in {name}s", ki->max);
		break;
	case SPEC_T_ENVS:
		cbuf_addf(&b, "up to %" PRId64 " variable names, not CADRE_*",
		    ki->max);
		break;
	case SPEC_T_REGEX:
		cbuf_adds(&b, "PCRE2, with a group named step");
		break;
	default:
		break;
	}
	if (ki->type == SPEC_T_WORDS || ki->type == SPEC_T_PATHS)
		cbuf_addf(&b, "; up to %" PRId64 " items", ki->max);
	return cbuf_detach(&b, NULL);
}

static char *
default_text(const struct spec_key_info *ki)
{
	struct cbuf	 b;
	const char	*p;

	if ((ki->flags & SPEC_F_REQUIRED) &&
	    strncmp(ki->path, "trainer.model.", 14) == 0)
		return xstrdup("required in a mapping");
	if ((ki->flags & SPEC_F_REQUIRED) &&
	    strncmp(ki->path, "trainer.", 8) == 0)
		return xstrdup("required with trainer");
	if ((ki->flags & SPEC_F_REQUIRED) &&
	    strncmp(ki->path, "program.", 8) == 0)
		return xstrdup("required with program");
	if (ki->flags & SPEC_F_REQUIRED)
		return xstrdup("required");
	if (ki->def == NULL)
		return xstrdup("unset");
	if (!spec_type_is_list(ki->type))
		return xstrdup(ki->def);
	cbuf_init(&b, SIZE_MAX);
	cbuf_addc(&b, '[');
	for (p = ki->def; *p != '\0'; p++) {
		if (*p == ',')
			cbuf_adds(&b, ", ");
		else
			cbuf_addc(&b, *p);
	}
	cbuf_addc(&b, ']');
	return cbuf_detach(&b, NULL);
}

static void
md_cell(FILE *fp, const char *s, int code)
{
	int	quote = code && *s != '\0';

	fputs(quote ? " `" : " ", fp);
	for (; *s != '\0'; s++) {
		if (*s == '|')
			fputs("\\|", fp);
		else
			fputc(*s, fp);
	}
	fputs(quote ? "` |" : " |", fp);
}

void
spec_keys_write(FILE *fp, enum spec_keys_format fmt)
{
	const struct spec_key_info	*ki;
	char				*range, *def;
	size_t				 w = 0;
	int				 k;

	if (fmt == SPEC_KEYS_MARKDOWN) {
		fprintf(fp, "| key | type | default | allowed | matrix | "
		    "description |\n");
		fprintf(fp, "|---|---|---|---|---|---|\n");
	} else {
		for (k = 0; k < SPEC_KEY_COUNT; k++) {
			if (strlen(keys[k].path) > w)
				w = strlen(keys[k].path);
		}
	}
	for (k = 0; k < SPEC_KEY_COUNT; k++) {
		ki = &keys[k];
		range = spec_key_range_text(k);
		def = default_text(ki);
		if (fmt == SPEC_KEYS_MARKDOWN) {
			fputc('|', fp);
			md_cell(fp, ki->path, 1);
			md_cell(fp, spec_type_name(ki->type), 0);
			md_cell(fp, def, !(ki->flags & SPEC_F_REQUIRED) &&
			    ki->def != NULL);
			md_cell(fp, range, 0);
			md_cell(fp, ki->flags & SPEC_F_MATRIX ? "yes" :
			    ki->flags & SPEC_F_MATRIX_NAMES ? "per name" : "",
			    0);
			md_cell(fp, ki->doc, 0);
			fputc('\n', fp);
		} else {
			fprintf(fp, "%-*s  %s, %s%s%s%s\n", (int)w, ki->path,
			    spec_type_name(ki->type),
			    ki->flags & SPEC_F_REQUIRED ? "" : ki->def == NULL ?
			    "unset by default" : "default ",
			    ki->flags & SPEC_F_REQUIRED || ki->def != NULL ?
			    def : "", *range != '\0' ? "; " : "", range);
			fprintf(fp, "%-*s  %s%s\n", (int)w, "", ki->doc,
			    ki->flags & SPEC_F_MATRIX ? " [matrix]" :
			    ki->flags & SPEC_F_MATRIX_NAMES ?
			    " [matrix: per name]" : "");
		}
		free(range);
		free(def);
	}
}
