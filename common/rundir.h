/*
 * The run directory: every name that cadred, cadre-agent, cadre-train and
 * a user's own tools exchange through it, defined here once
 * (docs/contracts.md explains each for people who write programs around
 * cadre). Code spells these names only through this header, so that a
 * file name, an end reason, an exit code, a metrics event or field, or a
 * train.json key changes in exactly one place.
 */
#ifndef CADRE_RUNDIR_H
#define CADRE_RUNDIR_H

/* ---------------------------------------------------------------- files */

/* Relative to the run directory. */
#define RUNDIR_TRAIN_JSON	"train.json"	/* the trainer's configuration */
#define RUNDIR_JOB_SCRIPT	"job.sh"	/* the script the backend submits */
#define RUNDIR_JOB_OUT		"job.out"	/* the job's stdout and stderr */
#define RUNDIR_STATUS		"status.json"	/* launch's verdict: the end reason */
#define RUNDIR_METRICS		"metrics.jsonl"	/* rank 0's events, a JSON object a line */
#define RUNDIR_EVAL		"eval.jsonl"	/* `cadre-train eval` figures */
#define RUNDIR_CHECKPOINTS	"checkpoints"	/* checkpoints/step-N/ */
#define RUNDIR_KEYS		"keys"
#define RUNDIR_CLIENT_KEY	RUNDIR_KEYS "/id_ed25519"
#define RUNDIR_CLIENT_PUB	RUNDIR_CLIENT_KEY ".pub"
#define RUNDIR_AGENTS		"agents"	/* agents/NODE.json, one per serving node */
#define RUNDIR_LOG		"log"		/* log/rank-N.log and rank-N.json */
#define RUNDIR_HOSTFILE		"hostfile"
#define RUNDIR_NODEADDRS	"nodeaddrs"	/* wrapper mode: "NODE ADDR" lines */
#define RUNDIR_NODEFILE		"nodefile"	/* wrapper mode: one line per slot */
#define RUNDIR_STAGE		"stage"		/* staging records */
#define RUNDIR_SPEC		"spec.yaml"	/* `cadre script --write`: the spec */
#define RUNDIR_RUN_JSON		"run.json"	/* `cadre script --write`: the run */
#define RUNDIR_PROGRAM		"program.json"	/* a user program's launch (docs/program.md) */
#define RUNDIR_STOP		"stop"		/* exists once cadre asked a program to stop */
#define RUNDIR_ATTEMPT		"attempt"	/* launch's count of attempts, a decimal */
#define RUNDIR_BIN		"bin"		/* `once`: the ssh that goes through the agents */
#define RUNDIR_CONTAINER	"container.json"	/* the runtime and image the run used */
#define RUNDIR_OCI		"oci"		/* oci/ID/config.json, oci/state: OCI bundles */

/* Inside checkpoints/. */
#define CKPT_LATEST		"latest"	/* names the newest complete step-N */
#define CKPT_DIR_PREFIX		"step-"		/* step-N: the checkpoint after step N */
#define CKPT_TMP_PREFIX		".tmp-"		/* being written */
#define CKPT_CORRUPT_PREFIX	".corrupt-"	/* failed verification, set aside */
#define CKPT_OLD_PREFIX		".old-"		/* replaced by a rewrite of the same step */
#define CKPT_META		"meta.json"	/* step, due_s, SHA-256 of each file */
/* Beside a checkpoint's weights (and in `cadre export`'s directory): the
 * run's vocabulary and the settings of cadre's tokenizer (uncased BERT
 * WordPiece with BERT's special tokens), so that transformers'
 * AutoTokenizer.from_pretrained loads the directory as it is. */
#define HF_VOCAB		"vocab.txt"
#define HF_TOKENIZER_CONFIG_FILE "tokenizer_config.json"
#define HF_TOKENIZER_CONFIG	"{\"tokenizer_class\": \"BertTokenizer\", " \
	"\"do_lower_case\": true, \"tokenize_chinese_chars\": true, " \
	"\"strip_accents\": null, \"unk_token\": \"[UNK]\", " \
	"\"sep_token\": \"[SEP]\", \"pad_token\": \"[PAD]\", " \
	"\"cls_token\": \"[CLS]\", \"mask_token\": \"[MASK]\"}"

/* The N of a checkpoints/step-N name (digits only), or -1 when name is
 * not one. */
long long rundir_ckpt_step(const char *name);

/* ---------------------------------------------------------------- end reasons */

/*
 * Why an attempt ended: status.json's "reason", the run's reason in
 * cadred, the words retries.on takes. The scheduler states done, failed,
 * preempted and node_fail, the run states done and failed, and the notify
 * events done and failed are the same words.
 */
#define REASON_DONE		"done"
#define REASON_FAILED		"failed"
#define REASON_NODE_FAIL	"node_fail"
#define REASON_PREEMPTED	"preempted"
#define REASON_STARTUP_TIMEOUT	"startup_timeout"
#define REASON_OOM		"oom"
/* checkpoints could not be written, several in a row (a full or failing
 * disk): resuming on the same node would fail the same way */
#define REASON_IO		"io"
/* Decided by cadred, never written by a job. */
#define REASON_TIMEOUT		"timeout"
#define REASON_CANCELLED	"cancelled"
#define REASON_LOST		"lost"		/* the scheduler forgot the job, no status.json */

/* The reasons status.json may carry, NULL-terminated. */
extern const char *const rundir_status_reasons[];
/* 1 when reason is one of rundir_status_reasons. */
int rundir_status_reason_known(const char *reason);

/* ---------------------------------------------------------------- run states */

/* A run's life, as cadre status shows it and cadred stores it. */
enum run_state {
	RUN_NEW = 0,		/* recorded, not yet handed to the scheduler */
	RUN_QUEUED,
	RUN_STARTING,
	RUN_RUNNING,
	RUN_DONE,
	RUN_FAILED,
	RUN_CANCELLED,
	RUN_REQUEUED,		/* ended resumably, waiting to be resubmitted */
	RUN_STATE_COUNT
};

/* The newest complete checkpoint of the run directory run_dir, as
 * checkpoints/latest names it: *rel gets "checkpoints/step-N" (caller
 * frees) and *step N. CADRE_ERR_NOT_FOUND when latest is missing or names
 * no step-N. */
int rundir_latest_checkpoint(const char *run_dir, char **rel, int64_t *step);

const char *run_state_name(enum run_state s);	/* never NULL */
/* 0 and *s, or CADRE_ERR_INVALID. */
int run_state_parse(const char *name, enum run_state *s);
int run_state_final(enum run_state s);	/* done, failed, cancelled */

/* ---------------------------------------------------------------- exit codes */

/* cadre-train's exit statuses. */
#define TRAIN_EXIT_DONE		0
#define TRAIN_EXIT_ERROR	1
#define TRAIN_EXIT_USAGE	2
#define TRAIN_EXIT_OOM		3	/* out of memory: not resumable */
#define TRAIN_EXIT_IO		74	/* EX_IOERR: CKPT_MAX_FAILURES checkpoint writes failed in a row */
#define TRAIN_EXIT_PREEMPTED	75	/* EX_TEMPFAIL: checkpointed, stopped on a signal */

/* `cadre-agent launch`'s exit statuses, one per status.json reason. */
enum launch_exit {
	LAUNCH_EXIT_DONE = 0,
	LAUNCH_EXIT_FAILED = 1,
	LAUNCH_EXIT_USAGE = 2,
	LAUNCH_EXIT_STARTUP_TIMEOUT = 3,
	LAUNCH_EXIT_NODE_FAIL = 4,
	LAUNCH_EXIT_PREEMPTED = 5,
	LAUNCH_EXIT_OOM = 6,
	LAUNCH_EXIT_IO = 7
};

/* ---------------------------------------------------------------- train.json */

/* The top-level members (docs/contracts.md "train.json"). */
#define TJ_VERSION              "version"
#define TJ_MODEL                "model"
#define TJ_TASK                 "task"
#define TJ_DATA                 "data"
#define TJ_EVAL_DATA            "eval_data"
#define TJ_VOCAB                "vocab"
#define TJ_INIT                 "init"
#define TJ_SEQ_LEN              "seq_len"
#define TJ_BATCH_SIZE           "batch_size"
#define TJ_GRAD_ACCUM           "grad_accum"
#define TJ_STEPS                "steps"
#define TJ_PRECISION            "precision"
#define TJ_DEVICE               "device"
#define TJ_GRAD_CLIP            "grad_clip"
#define TJ_GRAD_CHECKPOINTING   "grad_checkpointing"
#define TJ_DROPOUT              "dropout"
#define TJ_CHECKPOINT_EVERY     "checkpoint_every"
#define TJ_KEEP_CHECKPOINTS     "keep_checkpoints"
#define TJ_KEEP_TIMED           "keep_timed"
#define TJ_LOG_EVERY            "log_every"
#define TJ_SEED                 "seed"
#define TJ_SKIP_STEPS           "skip_steps"
#define TJ_OUT                  "out"
#define TJ_RESUME               "resume"
#define TJ_OPTIMIZER            "optimizer"
/* Members of "optimizer". */
#define TJ_OPT_NAME             "name"
#define TJ_OPT_LR               "lr"
#define TJ_OPT_WEIGHT_DECAY     "weight_decay"
#define TJ_OPT_BETA1            "beta1"
#define TJ_OPT_BETA2            "beta2"
#define TJ_OPT_EPS              "eps"
#define TJ_OPT_WARMUP           "warmup"
#define TJ_OPT_SCHEDULE         "schedule"
#define TJ_OPT_POWER            "power"
/* Members of "model" when it is an object of dimensions. */
#define TJ_MODEL_LAYERS         "layers"
#define TJ_MODEL_HIDDEN         "hidden"
#define TJ_MODEL_HEADS          "heads"
#define TJ_MODEL_INTERMEDIATE   "intermediate"
#define TJ_MODEL_VOCAB_SIZE     "vocab_size"
#define TJ_MODEL_MAX_POSITION   "max_position"

/* ---------------------------------------------------------------- program.json */

/*
 * A user's own program instead of cadre-train (docs/program.md): written
 * by cadred (sched/jobscript.c) from the spec's program section, or by
 * `cadre-agent launch --per-rank|--per-node|--once` in wrapper mode, and
 * read by launch and by `cadre-agent rank`.
 */
#define PROGRAM_VERSION		1
#define PJ_VERSION		"version"
#define PJ_COMMAND		"command"	/* list of words, or a string for sh -c */
#define PJ_LAUNCH		"launch"	/* PROGRAM_LAUNCH_* */
#define PJ_WORKDIR		"workdir"	/* absolute */
#define PJ_ENV			"env"		/* object: NAME -> string */
#define PJ_VARS			"vars"		/* object: name -> string, for {name} */
#define PJ_SIGNAL		"signal"	/* "SIGUSR1": the checkpoint request */
#define PJ_CHECKPOINT_EVERY	"checkpoint_every"	/* seconds; 0: none timed */
#define PJ_KEEP_CHECKPOINTS	"keep_checkpoints"	/* 0: keep all */
#define PJ_METRICS_REGEX	"metrics_regex"	/* optional: PCRE2 with named groups */
#define PJ_SETUP		"setup"		/* list of sh -c strings, per node */
#define PJ_EXPERIMENT		"experiment"
#define PJ_RUN_ID		"run_id"
#define PJ_CONFIG_ID		"config_id"

#define PROGRAM_LAUNCH_PER_RANK	"per_rank"
#define PROGRAM_LAUNCH_PER_NODE	"per_node"
#define PROGRAM_LAUNCH_ONCE	"once"
/* A program's exit status that asks for a requeue: it saved and stopped. */
#define PROGRAM_EXIT_REQUEUE	TRAIN_EXIT_PREEMPTED
#define PROGRAM_EXIT_NOT_FOUND	127	/* the shell's "command not found" */

/*
 * The {name}s a program's command may use, each the value of an
 * environment variable every process of the program gets, besides the
 * program's own vars. NULL-terminated; one table for the spec's check and
 * the agent's substitution.
 */
struct rundir_placeholder {
	const char	*name;	/* as in {name} */
	const char	*env;	/* the variable holding its value */
};
extern const struct rundir_placeholder rundir_placeholders[];
/* The variable of {name}, or NULL when name is not a built-in one. */
const char *rundir_placeholder_env(const char *name);

/*
 * Expands the {name}s of text into out: each {name} ([A-Za-z_][A-Za-z0-9_]*
 * between braces, at most 64 bytes, not after a '$') is replaced by what
 * lookup returns (NULL: unknown); "{{" and "}}" are single braces; any
 * other brace stays as it is (the shell's ${VAR} and brace groups, JSON).
 * With shell set, each value enters as one sh word (cbuf_add_shell_word).
 * 0, or CADRE_ERR_INVALID (an unknown or too long name) with the message
 * and the byte offset of the {name} in *errpos, or CADRE_ERR_TOO_LARGE
 * (out's bound). The one reader of the syntax: the spec's check passes a
 * lookup that knows the names, the agent one that gives the values.
 */
struct cbuf;
typedef const char *(*rundir_lookup_fn)(const char *name, void *ctx);
int rundir_expand(const char *text, rundir_lookup_fn lookup, void *ctx,
    int shell, struct cbuf *out, size_t *errpos, char *msg, size_t msglen);
#define RUNDIR_NAME_MAX		64	/* bytes of a {name} */

/* The environment of every process of a program. */
#define ENV_RUN_ID		"CADRE_RUN_ID"
#define ENV_EXPERIMENT		"CADRE_EXPERIMENT"
#define ENV_CONFIG_ID		"CADRE_CONFIG_ID"
#define ENV_RUN_DIR		"CADRE_RUN_DIR"
#define ENV_ATTEMPT		"CADRE_ATTEMPT"
#define ENV_CHECKPOINT_DIR	"CADRE_CHECKPOINT_DIR"
#define ENV_RESUME_FROM		"CADRE_RESUME_FROM"	/* "": the first attempt */
#define ENV_METRICS		"CADRE_METRICS"
#define ENV_DEADLINE		"CADRE_DEADLINE"	/* epoch seconds; "": none */
#define ENV_STOP_FILE		"CADRE_STOP_FILE"
#define ENV_NNODES		"CADRE_NNODES"
#define ENV_NPROC_PER_NODE	"CADRE_NPROC_PER_NODE"
#define ENV_NODE_RANK		"CADRE_NODE_RANK"
#define ENV_RANKS		"CADRE_RANKS"
#define ENV_RDZV_ENDPOINT	"CADRE_RDZV_ENDPOINT"
#define ENV_HOSTFILE		"CADRE_HOSTFILE"
#define ENV_MASTER_ADDR		"MASTER_ADDR"
#define ENV_MASTER_PORT		"MASTER_PORT"

/* ---------------------------------------------------------------- metrics.jsonl */

/* Every line is a JSON object with an "event" member. */
#define MX_EVENT		"event"
#define MX_EV_START		"start"		/* an attempt began */
#define MX_EV_STEP		"step"		/* an optimizer step */
#define MX_EV_CHECKPOINT	"checkpoint"	/* a checkpoint is complete */
#define MX_EV_EVAL		"eval"
#define MX_EV_ERROR		"error"
/* resume passed over a checkpoint that does not verify (before start) */
#define MX_EV_CHECKPOINT_SKIPPED "checkpoint_skipped"
#define MX_EV_SUMMARY		"summary"	/* an attempt ended */
/* Fields. */
#define MX_STEP			"step"
#define MX_LOSS			"loss"
#define MX_ELAPSED_S		"elapsed_s"	/* training time over all attempts */
#define MX_SAMPLES		"samples"
#define MX_SAMPLES_PER_S	"samples_per_s"
#define MX_DUE_S		"due_s"		/* the mark a timed checkpoint stands for */
#define MX_PATH			"path"
#define MX_WHY			"why"		/* of a checkpoint_skipped event */
#define MX_KIND			"kind"		/* of an error event: REASON_OOM, ... */
#define MX_COMPLETE		"complete"	/* summary: training reached its end */
#define MX_PEAK_RSS		"peak_rss_bytes"
#define MX_ENV			"env"
#define MX_ACCURACY		"accuracy"
#define MX_EXIT			"exit"		/* summary: done or preempted */

/* status.json's members. */
#define STATUS_REASON		"reason"
#define STATUS_MESSAGE		"message"
/* Bytes of a status.json any reader takes: it lists every rank (about
 * 130 bytes each), so this holds a run of some 100,000 ranks. */
#define RUNDIR_STATUS_MAX	((size_t)16 << 20)

#endif
