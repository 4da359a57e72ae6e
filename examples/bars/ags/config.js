// AGS (version 1): the most relevant Live Activity (docs/bars.md). Add to
// ~/.config/ags/config.js and put LiveActivity() among a bar's widgets.
const activity = Variable({ text: '', tooltip: '', state: '' }, {
    listen: ['widget-host bar --format json', line => JSON.parse(line)],
});

export const LiveActivity = () => Widget.Button({
    class_name: activity.bind().as(a => `live-activity ${a.state}`),
    visible: activity.bind().as(a => a.text !== ''),
    tooltip_text: activity.bind().as(a => a.tooltip),
    on_clicked: () => Utils.execAsync('widget-host tap-activity most-relevant compactTrailing'),
    child: Widget.Label({ label: activity.bind().as(a => a.text) }),
});
