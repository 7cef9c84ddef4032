"""torch.utils.tensorboard.SummaryWriter: what a training script logs. The simulator's values are
placeholders, so no event files are written; the writer keeps what was logged (`scalars`: tag,
step and value) for a program that reads it back, and costs nothing on the simulated machine."""


class SummaryWriter:
    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        self.log_dir = log_dir
        self.scalars = []
        self.closed = False

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        self.scalars.append((tag, global_step, float(scalar_value)))

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        for tag, value in tag_scalar_dict.items():
            self.add_scalar(f"{main_tag}/{tag}", value, global_step)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        pass

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        pass

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        pass

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        pass

    def flush(self):
        pass

    def close(self):
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
